package main

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/akira-bot/akira/jobs/store"
)

func init() { subcommands = append(subcommands, newTokenCmd) }

// newTokenCmd manages the operator API tokens of the REST API and the dashboard, in the App's Redis.
func newTokenCmd() *cobra.Command {
	var scope string
	var repos []string
	cmd := &cobra.Command{
		Use:   "token create NAME [--scope read|start|control] [--repo owner/name]... | list | revoke NAME",
		Short: "Manage the operator tokens of the REST API and the dashboard",
		Long: `Token manages the API tokens operators use for the REST API (/api/v1, Authorization: Bearer) and the
dashboard (/ui) on the admin address. A read token sees runs, the queue and logs; a start token may
also start runs (POST /api/v1/runs, akira handoff, akira mcp); a control token may also stop, abort,
retry, approve and skip, each action audited and mirrored on the pull request with the token's name.
Creating and revoking a token are audited too, as done by this machine's user (user@host, via cli).
--repo (repeatable) limits the token to those repositories: it sees and acts on their runs only. Only a token's SHA-256 is stored; create prints the token once. Uses REDIS_URL and
REDIS_PASSWORD like akira serve.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			rdb, err := redisConnect(ctx, cmp.Or(os.Getenv("REDIS_URL"), "redis://127.0.0.1:6379/0"), os.Getenv("REDIS_PASSWORD"))
			if err != nil {
				return err
			}
			defer rdb.Close()
			st := store.NewStore(rdb, "")
			out := cmd.OutOrStdout()
			switch {
			case args[0] == "create" && len(args) == 2:
				secret, err := st.CreateTokenBy(ctx, cliActor(), args[1], scope, repos)
				if err != nil {
					return withExit(1, err)
				}
				fmt.Fprintf(out, "%s\n", secret)
				where := "every repository"
				if len(repos) > 0 {
					where = strings.Join(repos, ", ")
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "akira: token %s (%s, %s) created; it is shown only now\n", args[1], scope, where)
				return nil
			case args[0] == "list" && len(args) == 1:
				toks, err := st.Tokens(ctx)
				if err != nil {
					return withExit(1, err)
				}
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tSCOPE\tCREATED\tREPOSITORIES")
				for _, t := range toks {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, t.Scope, t.Created.Format("2006-01-02 15:04"), cmp.Or(strings.Join(t.Repos, ","), "all"))
				}
				return tw.Flush()
			case args[0] == "revoke" && len(args) == 2:
				ok, err := st.RevokeTokenBy(ctx, cliActor(), args[1])
				if err != nil {
					return withExit(1, err)
				}
				if !ok {
					return withExit(1, fmt.Errorf("no token %s", args[1]))
				}
				fmt.Fprintf(out, "Revoked %s.\n", args[1])
				return nil
			}
			return withExit(2, errors.New("usage: akira token create NAME [--scope read|start|control] [--repo owner/name]... | list | revoke NAME"))
		},
	}
	cmd.Flags().StringVar(&scope, "scope", store.ScopeRead, "read, start or control")
	cmd.Flags().StringArrayVar(&repos, "repo", nil, "limit the token to this repository (owner/name; repeatable)")
	return cmd
}

// cliActor is who runs akira token, for the audit: the system user and the machine, which is what
// an operator's shell tells about them (the command has no other identity to go by).
func cliActor() store.Actor {
	name := cmp.Or(os.Getenv("USER"), os.Getenv("LOGNAME"))
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if host, err := os.Hostname(); err == nil && host != "" {
		name = cmp.Or(name, "unknown") + "@" + host
	}
	return store.Actor{Name: name, Via: store.ViaCLI}
}
