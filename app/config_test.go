package app

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var testKey struct {
	once  sync.Once
	pkcs1 []byte
	pkcs8 []byte
	ec    []byte
}

// testKeys returns an RSA key as PKCS#1 and PKCS#8 PEM and an EC key, generated once per test binary.
func testKeys(t *testing.T) (pkcs1, pkcs8, ec []byte) {
	t.Helper()
	testKey.once.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		testKey.pkcs1 = pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			panic(err)
		}
		testKey.pkcs8 = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
		ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			panic(err)
		}
		der, err = x509.MarshalPKCS8PrivateKey(ek)
		if err != nil {
			panic(err)
		}
		testKey.ec = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	})
	return testKey.pkcs1, testKey.pkcs8, testKey.ec
}

func envFunc(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestLoadConfigFromEnv(t *testing.T) {
	pkcs1, pkcs8, _ := testKeys(t)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "app.pem")
	if err := os.WriteFile(keyFile, pkcs1, 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("minimal with key file gets defaults", func(t *testing.T) {
		c, err := LoadConfigFromEnv(envFunc(map[string]string{
			"GITHUB_APP_ID": "123", "GITHUB_PRIVATE_KEY_PATH": keyFile, "GITHUB_WEBHOOK_SECRET": "s3cret",
		}))
		if err != nil {
			t.Fatal(err)
		}
		if c.AppID != 123 || string(c.WebhookSecret) != "s3cret" || c.APIURL != DefaultAPIURL || c.Addr != DefaultAddr {
			t.Fatalf("config = %+v", c)
		}
		if c.PrivateKey == nil || string(c.PrivateKeyPEM) != string(pkcs1) {
			t.Fatal("private key not loaded")
		}
		if sc := c.Server(); sc.AppID != 123 || string(sc.WebhookSecret) != "s3cret" {
			t.Fatalf("server config = %+v", sc)
		}
	})

	t.Run("inline key with escaped newlines, enterprise URL, address, bot login", func(t *testing.T) {
		c, err := LoadConfigFromEnv(envFunc(map[string]string{
			"GITHUB_APP_ID":         " 42 ",
			"GITHUB_PRIVATE_KEY":    strings.ReplaceAll(string(pkcs8), "\n", `\n`),
			"GITHUB_WEBHOOK_SECRET": "x",
			"GITHUB_API_URL":        "https://ghe.example.com/api/v3",
			"AKIRA_ADDR":            "127.0.0.1:9000",
			"AKIRA_BOT_LOGIN":       "akira[bot]",
		}))
		if err != nil {
			t.Fatal(err)
		}
		if c.APIURL != "https://ghe.example.com/api/v3/" || c.Addr != "127.0.0.1:9000" || c.BotLogin != "akira[bot]" || c.PrivateKey == nil {
			t.Fatalf("config = %+v", c)
		}
	})

	base := func(over map[string]string) map[string]string {
		m := map[string]string{"GITHUB_APP_ID": "1", "GITHUB_PRIVATE_KEY": string(pkcs1), "GITHUB_WEBHOOK_SECRET": "x"}
		for k, v := range over {
			m[k] = v
		}
		return m
	}
	_, _, ec := testKeys(t)
	ecFile := filepath.Join(dir, "ec.pem")
	if err := os.WriteFile(ecFile, ec, 0o600); err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{"app id missing", base(map[string]string{"GITHUB_APP_ID": ""}), "GITHUB_APP_ID is not set"},
		{"app id not a number", base(map[string]string{"GITHUB_APP_ID": "abc"}), "GITHUB_APP_ID: \"abc\" is not a positive integer"},
		{"app id zero", base(map[string]string{"GITHUB_APP_ID": "0"}), "GITHUB_APP_ID"},
		{"app id negative", base(map[string]string{"GITHUB_APP_ID": "-5"}), "GITHUB_APP_ID"},
		{"no key", base(map[string]string{"GITHUB_PRIVATE_KEY": ""}), "GITHUB_PRIVATE_KEY_PATH or GITHUB_PRIVATE_KEY must be set"},
		{"both keys", base(map[string]string{"GITHUB_PRIVATE_KEY_PATH": keyFile}), "set only one"},
		{"key file missing", base(map[string]string{"GITHUB_PRIVATE_KEY": "", "GITHUB_PRIVATE_KEY_PATH": filepath.Join(dir, "nope.pem")}), "GITHUB_PRIVATE_KEY_PATH:"},
		{"key file not PEM", base(map[string]string{"GITHUB_PRIVATE_KEY": "", "GITHUB_PRIVATE_KEY_PATH": filepath.Join(dir)}), "GITHUB_PRIVATE_KEY_PATH:"},
		{"inline key garbage", base(map[string]string{"GITHUB_PRIVATE_KEY": "hello"}), "GITHUB_PRIVATE_KEY: not a PEM-encoded RSA private key"},
		{"EC key", base(map[string]string{"GITHUB_PRIVATE_KEY": "", "GITHUB_PRIVATE_KEY_PATH": ecFile}), "GITHUB_PRIVATE_KEY_PATH: not an RSA private key"},
		{"secret missing", base(map[string]string{"GITHUB_WEBHOOK_SECRET": ""}), "GITHUB_WEBHOOK_SECRET is not set"},
		{"api url relative", base(map[string]string{"GITHUB_API_URL": "api.github.com"}), "GITHUB_API_URL: \"api.github.com\" is not an absolute http(s) URL"},
		{"api url other scheme", base(map[string]string{"GITHUB_API_URL": "ftp://x/"}), "GITHUB_API_URL"},
		{"api url with query", base(map[string]string{"GITHUB_API_URL": "https://x/?a=b"}), "GITHUB_API_URL"},
		{"addr no port", base(map[string]string{"AKIRA_ADDR": "localhost"}), "AKIRA_ADDR"},
		{"addr bad port", base(map[string]string{"AKIRA_ADDR": ":http-alt"}), "AKIRA_ADDR"},
		{"addr port range", base(map[string]string{"AKIRA_ADDR": ":70000"}), "AKIRA_ADDR"},
		{"bot login not a bot", base(map[string]string{"AKIRA_BOT_LOGIN": "akira"}), "AKIRA_BOT_LOGIN"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadConfigFromEnv(envFunc(tt.env))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}

	t.Run("every problem is reported at once", func(t *testing.T) {
		_, err := LoadConfigFromEnv(envFunc(map[string]string{"GITHUB_API_URL": "nope", "AKIRA_ADDR": "nope"}))
		if err == nil {
			t.Fatal("no error")
		}
		for _, name := range []string{"GITHUB_APP_ID", "GITHUB_PRIVATE_KEY", "GITHUB_WEBHOOK_SECRET", "GITHUB_API_URL", "AKIRA_ADDR"} {
			if !strings.Contains(err.Error(), name) {
				t.Errorf("error does not name %s: %v", name, err)
			}
		}
	})
}
