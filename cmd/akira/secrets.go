package main

import "os"

// secretVars are read once at start and then removed from the environment, so that nothing the
// process starts later can inherit them, even by mistake.
// REDIS_URL goes too: it usually carries Redis's password.
var secretVars = []string{"GITHUB_PRIVATE_KEY", "GITHUB_PRIVATE_KEY_PATH", "GITHUB_WEBHOOK_SECRET", "REDIS_URL", "REDIS_PASSWORD", "AKIRA_AUDIT_SECRET"}

// forgetSecrets drops the secret variables from the process's environment and closes its /proc
// entries to other processes of the same user. The key and the secret live on only in memory.
func forgetSecrets() error {
	for _, v := range secretVars {
		_ = os.Unsetenv(v)
	}
	return closeProcToSameUser()
}
