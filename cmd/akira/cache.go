package main

import (
	"os"
	"path/filepath"

	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/workspace"
)

// localCache is the repository cache of `akira run` and `akira status`: AKIRA_CACHE_DIR, else
// akira/mirrors in the user's cache directory; AKIRA_CACHE_DIR=off turns it off. It only serves
// network remotes (a local repository is cloned with hard links already). A cache that cannot be
// made is no reason to stop: the clone then goes to the remote as before.
func localCache() *workspace.Cache {
	dir := os.Getenv("AKIRA_CACHE_DIR")
	switch dir {
	case "off":
		return nil
	case "":
		base, err := os.UserCacheDir()
		if err != nil {
			return nil
		}
		dir = filepath.Join(base, "akira", "mirrors")
	}
	max := int64(DefaultCacheMax)
	if v := os.Getenv("AKIRA_CACHE_MAX"); v != "" {
		if n, err := config.ParseSize(v); err == nil {
			max = n
		}
	}
	c, err := workspace.NewCache(dir, max)
	if err != nil {
		return nil
	}
	return c
}
