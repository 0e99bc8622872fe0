package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/akira-bot/akira/app"
)

func init() { subcommands = append(subcommands, newSetupCmd) }

type setupOptions struct {
	webhookURL, name, org, githubURL, apiURL, addr, envFile, keyFile string
	force, workflows                                                 bool
}

func newSetupCmd() *cobra.Command {
	var o setupOptions
	cmd := &cobra.Command{
		Use:   "setup --webhook-url https://<host>/webhook",
		Short: "Register Akira's GitHub App in your browser and save its credentials",
		Long: `Setup registers the GitHub App through GitHub's manifest flow. It serves a local page with one
button; the button sends Akira's manifest (permissions, events, your webhook URL) to GitHub, which asks
you to confirm and sends you back here. Setup then saves the App's id, webhook secret and client
credentials to an env file and its private key to a PEM file (both readable by you only), and prints
the installation link and the command that starts Akira with them.`,
		Example: `  akira setup --webhook-url https://akira.example.com/webhook
  akira setup --webhook-url https://akira.example.com/webhook --org my-org
  akira setup --webhook-url https://akira.corp.example/webhook --github-url https://github.corp.example`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return setup(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.webhookURL, "webhook-url", "", "where GitHub delivers webhooks: https://<your host>/webhook (required)")
	f.StringVar(&o.name, "name", "Akira", "the App's name (GitHub lets you change it before creating it)")
	f.StringVar(&o.org, "org", "", "register the App for this organization instead of your account")
	f.StringVar(&o.githubURL, "github-url", app.DefaultGitHubURL, "GitHub's web address (GitHub Enterprise Server: https://<host>)")
	f.StringVar(&o.apiURL, "api-url", "", "GitHub's REST API root (default: derived from --github-url)")
	f.StringVar(&o.addr, "addr", "localhost:3000", "address of the local setup page")
	f.StringVar(&o.envFile, "env-file", "akira.env", "file for the App's settings and secrets")
	f.StringVar(&o.keyFile, "key-file", "akira.private-key.pem", "file for the App's private key")
	f.BoolVar(&o.force, "force", false, "replace the env and key files if they exist")
	f.BoolVar(&o.workflows, "workflows", false, "ask for the workflows permission, so tasks may change .github/workflows where a repository says workflows: allow (set allow_workflows: true in the operator's file too)")
	return cmd
}

func setup(cmd *cobra.Command, o setupOptions) error {
	if o.webhookURL == "" {
		return withExit(2, errors.New("--webhook-url is required: the address GitHub will deliver webhooks to, https://<your host>/webhook"))
	}
	ctx := cmd.Context()
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("setup: listen on %s: %w", o.addr, err)
	}
	defer ln.Close()
	host, _, _ := net.SplitHostPort(o.addr)
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "localhost"
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	local := "http://" + net.JoinHostPort(host, port)
	s, err := app.NewSetup(app.SetupConfig{
		WebhookURL: o.webhookURL, Name: o.name, GitHubURL: o.githubURL, APIURL: o.apiURL, Org: o.org,
		RedirectURL: local + "/callback", EnvFile: o.envFile, KeyFile: o.keyFile, Force: o.force, Workflows: o.workflows,
	})
	if err != nil {
		return withExit(2, err)
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	defer func() {
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "Open %s/ in your browser and press \"Create GitHub App\".\n", local)
	select {
	case <-ctx.Done():
		return fmt.Errorf("setup: interrupted before GitHub sent the App back; nothing was written")
	case err := <-serveErr:
		return fmt.Errorf("setup: local page: %w", err)
	case res := <-s.Done():
		if res.Err != nil {
			return res.Err
		}
		fmt.Fprintf(out, "Registered the GitHub App %q (id %d).\n", res.App.Name, res.App.ID)
		fmt.Fprintf(out, "Wrote %s (settings and secrets) and %s (private key), readable by you only.\n", o.envFile, o.keyFile)
		fmt.Fprintf(out, "Install it on your repositories: %s\n", res.InstallURL)
		fmt.Fprintf(out, "Then start Akira:\n\n  %s\n", res.StartCommand)
		return nil
	}
}
