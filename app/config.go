package app

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// Defaults of the settings read from the environment.
const (
	DefaultAPIURL = "https://api.github.com/"
	DefaultAddr   = ":8080"
)

// Config is the GitHub App's settings, read from the environment by LoadConfigFromEnv.
type Config struct {
	// AppID is the GitHub App id (GITHUB_APP_ID).
	AppID int64
	// PrivateKeyPEM is the app's private key, from GITHUB_PRIVATE_KEY_PATH or GITHUB_PRIVATE_KEY.
	PrivateKeyPEM []byte
	// PrivateKey is PrivateKeyPEM parsed, so a bad key fails at start rather than at the first webhook.
	PrivateKey *rsa.PrivateKey
	// WebhookSecret checks X-Hub-Signature-256 (GITHUB_WEBHOOK_SECRET).
	WebhookSecret []byte
	// APIURL is the REST base URL with a trailing slash (GITHUB_API_URL); GitHub Enterprise Server uses
	// https://<host>/api/v3/.
	APIURL string
	// Addr is where the webhook server listens (AKIRA_ADDR).
	Addr string
	// BotLogin is the app's bot user, "<slug>[bot]" (AKIRA_BOT_LOGIN, optional). Every login ending in [bot]
	// is ignored anyway; this also catches the app's pushes when GitHub reports the pusher by name only.
	BotLogin string
}

// Server returns the part of the configuration the webhook server needs.
func (c Config) Server() ServerConfig {
	return ServerConfig{AppID: c.AppID, WebhookSecret: c.WebhookSecret, BotLogin: c.BotLogin}
}

// LoadConfigFromEnv reads the configuration through getenv (os.Getenv in production). Every missing or
// malformed setting is reported, each error naming its variable, so an operator fixes them in one go.
func LoadConfigFromEnv(getenv func(string) string) (Config, error) {
	var (
		c    Config
		errs []error
	)
	get := func(name string) string { return strings.TrimSpace(getenv(name)) }

	switch v := get("GITHUB_APP_ID"); {
	case v == "":
		errs = append(errs, errors.New("GITHUB_APP_ID is not set"))
	default:
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id <= 0 {
			errs = append(errs, fmt.Errorf("GITHUB_APP_ID: %q is not a positive integer", v))
		}
		c.AppID = id
	}

	pemBytes, keyErr := privateKeyFromEnv(get("GITHUB_PRIVATE_KEY_PATH"), getenv("GITHUB_PRIVATE_KEY"))
	if keyErr != nil {
		errs = append(errs, keyErr)
	} else {
		c.PrivateKeyPEM = pemBytes
		key, err := parseRSAKey(pemBytes)
		if err != nil {
			name := "GITHUB_PRIVATE_KEY"
			if get("GITHUB_PRIVATE_KEY_PATH") != "" {
				name = "GITHUB_PRIVATE_KEY_PATH"
			}
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
		c.PrivateKey = key
	}

	// The secret is used byte for byte: GitHub signs with exactly what was typed in the app settings.
	if s := getenv("GITHUB_WEBHOOK_SECRET"); s == "" {
		errs = append(errs, errors.New("GITHUB_WEBHOOK_SECRET is not set"))
	} else {
		c.WebhookSecret = []byte(s)
	}

	api, err := parseAPIURL(get("GITHUB_API_URL"))
	if err != nil {
		errs = append(errs, fmt.Errorf("GITHUB_API_URL: %w", err))
	}
	c.APIURL = api

	addr, err := parseAddr(get("AKIRA_ADDR"))
	if err != nil {
		errs = append(errs, fmt.Errorf("AKIRA_ADDR: %w", err))
	}
	c.Addr = addr

	c.BotLogin = get("AKIRA_BOT_LOGIN")
	if c.BotLogin != "" && !strings.HasSuffix(c.BotLogin, "[bot]") {
		errs = append(errs, fmt.Errorf("AKIRA_BOT_LOGIN: %q is not a bot login (<app slug>[bot])", c.BotLogin))
	}

	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	return c, nil
}

func privateKeyFromEnv(path, inline string) ([]byte, error) {
	switch {
	case path != "" && strings.TrimSpace(inline) != "":
		return nil, errors.New("GITHUB_PRIVATE_KEY_PATH and GITHUB_PRIVATE_KEY are both set; set only one")
	case path != "":
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("GITHUB_PRIVATE_KEY_PATH: %w", err)
		}
		return data, nil
	case strings.TrimSpace(inline) != "":
		// Env files and CI secrets often carry the PEM on one line with literal \n.
		if !strings.Contains(inline, "\n") {
			inline = strings.ReplaceAll(inline, `\n`, "\n")
		}
		return []byte(inline), nil
	default:
		return nil, errors.New("GITHUB_PRIVATE_KEY_PATH or GITHUB_PRIVATE_KEY must be set")
	}
}

func parseRSAKey(data []byte) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("not a PEM-encoded RSA private key")
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("not a PEM-encoded RSA private key (%s block)", block.Type)
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("not an RSA private key (%T); GitHub App keys are RSA", k)
	}
	return rk, nil
}

func parseAPIURL(v string) (string, error) {
	if v == "" {
		return DefaultAPIURL, nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q is not an absolute http(s) URL", v)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%q must not have a query or fragment", v)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
		if u.RawPath != "" {
			u.RawPath += "/"
		}
	}
	return u.String(), nil
}

func parseAddr(v string) (string, error) {
	if v == "" {
		return DefaultAddr, nil
	}
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		return "", fmt.Errorf("%q is not host:port (e.g. :8080): %w", v, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", fmt.Errorf("%q: port %q is not a number from 0 to 65535", v, port)
	}
	return v, nil
}
