package main

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/akira-bot/akira/app/remote"
)

func init() { subcommands = append(subcommands, newMCPCmd) }

func newMCPCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve the Model Context Protocol over stdio: an editor's assistant hands off plans and follows runs",
		Long: `Mcp is a Model Context Protocol server on stdin and stdout for an editor's coding assistant. Its
tools start_run, run_status, stop_run, answer_escalation and list_runs (and pause_run and resume_run,
which answer that this server cannot pause yet) each make one call of the REST API of the Akira at
AKIRA_SERVER with the token AKIRA_TOKEN, with that token's rights. Configure it in the editor as the
command "akira mcp" with those two variables in its environment. It logs nothing on stdout.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := remoteClient()
			if err != nil {
				return err
			}
			// Every request read before stdin ends is answered before the process exits.
			if err := c.MCPServer(version).Run(cmd.Context(), remote.AnsweringAll(&mcp.StdioTransport{})); err != nil && cmd.Context().Err() == nil {
				return withExit(1, err)
			}
			return nil
		},
	}
}
