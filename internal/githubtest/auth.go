package githubtest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v4"
)

// NewTestKey generates a 2048-bit RSA private key as PKCS#1 PEM, the format GitHub hands out for app keys.
func NewTestKey() ([]byte, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("githubtest: generate key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), nil
}

var shared struct {
	once sync.Once
	pem  []byte
	key  *rsa.PrivateKey
	err  error
}

// loadOrSharedKey parses the configured key, or returns one key generated once per process: generating a key
// costs tens of milliseconds and more under -race, and tests gain nothing from a fresh one each time.
func loadOrSharedKey(pemBytes []byte) (*rsa.PrivateKey, []byte, error) {
	if pemBytes != nil {
		key, err := jwt.ParseRSAPrivateKeyFromPEM(pemBytes)
		if err != nil {
			return nil, nil, fmt.Errorf("githubtest: parse private key: %w", err)
		}
		return key, pemBytes, nil
	}
	shared.once.Do(func() {
		shared.pem, shared.err = NewTestKey()
		if shared.err == nil {
			shared.key, shared.err = jwt.ParseRSAPrivateKeyFromPEM(shared.pem)
		}
	})
	return shared.key, shared.pem, shared.err
}

type installation struct {
	id      int64
	account string
	created time.Time
	// workflows: the installation holds the workflows permission (SetWorkflowsPermission).
	workflows bool
}

type token struct {
	value          string
	installationID int64
	repos          map[string]bool // nil: every repository of the installation
	expiresAt      time.Time
	// workflows: the installation held the workflows permission when the token was minted.
	workflows bool
}

// maxJWTLifetime is GitHub's limit on how far in the future a JWT's exp may be.
const maxJWTLifetime = 10 * time.Minute

// checkAppJWT verifies the app JWT in the Authorization header. It writes GitHub's 401 and returns false when
// the token is missing or invalid.
func (s *Server) checkAppJWT(w http.ResponseWriter, r *http.Request) bool {
	raw, ok := bearer(r.Header.Get("Authorization"))
	if !ok || strings.Count(raw, ".") != 2 {
		writeError(w, http.StatusUnauthorized, "A JSON web token could not be decoded")
		return false
	}
	var claims jwt.RegisteredClaims
	_, err := jwt.ParseWithClaims(raw, &claims, func(*jwt.Token) (any, error) {
		return &s.key.PublicKey, nil
	}, jwt.WithValidMethods([]string{"RS256"}))
	now := time.Now()
	switch {
	case errors.Is(err, jwt.ErrTokenExpired) || (err == nil && claims.ExpiresAt == nil):
		writeError(w, http.StatusUnauthorized, "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires")
		return false
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued) || (err == nil && claims.IssuedAt == nil):
		writeError(w, http.StatusUnauthorized, "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued")
		return false
	case err != nil:
		writeError(w, http.StatusUnauthorized, "A JSON web token could not be decoded")
		return false
	case claims.ExpiresAt.Time.After(now.Add(maxJWTLifetime + time.Minute)):
		// A minute of slack for clock drift; ghinstallation asks for two minutes.
		writeError(w, http.StatusUnauthorized, "'Expiration time' claim ('exp') is too far in the future")
		return false
	case claims.Issuer != strconv.FormatInt(s.appID, 10):
		writeError(w, http.StatusUnauthorized, "'Issuer' claim ('iss') must be an Integer")
		return false
	}
	return true
}

// bearer extracts the credential from "Bearer X" or "token X".
func bearer(h string) (string, bool) {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok {
		return "", false
	}
	switch strings.ToLower(scheme) {
	case "bearer", "token":
		return strings.TrimSpace(cred), cred != ""
	}
	return "", false
}

// credential extracts an installation token from a REST or git request: "Bearer X", "token X", or basic auth
// with the token as password (GitHub accepts any user name; git clients send x-access-token).
func credential(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if v, ok := bearer(h); ok {
		return v
	}
	if scheme, enc, ok := strings.Cut(h, " "); ok && strings.EqualFold(scheme, "basic") {
		dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
		if err == nil {
			if _, pass, ok := strings.Cut(string(dec), ":"); ok {
				return pass
			}
		}
	}
	return ""
}

// tokenFor returns the valid installation token of a request, or nil.
func (s *Server) tokenFor(r *http.Request) *token {
	v := credential(r)
	if v == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tokens[v]
	if t == nil || !s.clock().Before(t.expiresAt) {
		return nil
	}
	if _, ok := s.installations[t.installationID]; !ok {
		return nil
	}
	return t
}

// mintToken issues an installation token. Callers hold s.mu.
func (s *Server) mintToken(installationID int64, repos map[string]bool) *token {
	b := make([]byte, 18)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("githubtest: random: %v", err))
	}
	t := &token{
		value:          "ghs_" + hex.EncodeToString(b),
		installationID: installationID,
		repos:          repos,
		expiresAt:      s.clock().Add(s.tokenTTL).Truncate(time.Second),
	}
	if in := s.installations[installationID]; in != nil {
		t.workflows = in.workflows
	}
	s.tokens[t.value] = t
	return t
}

// InstallationToken mints an installation token directly, for tests that need one without the JWT exchange
// (for example to clone with git).
func (s *Server) InstallationToken(installationID int64) string {
	s.mu.Lock()
	_, ok := s.installations[installationID]
	var v string
	if ok {
		v = s.mintToken(installationID, nil).value
	}
	s.mu.Unlock()
	if !ok {
		s.fatalf("no installation %d", installationID)
	}
	return v
}

// ExpireTokens makes every installation token issued so far expired; new ones can still be minted.
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	past := s.clock().Add(-time.Second)
	for _, t := range s.tokens {
		t.expiresAt = past
	}
}

// TokensIssued is how many installation tokens the server has minted.
func (s *Server) TokensIssued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tokens)
}

// ensureInstallation returns the installation of an account, creating it. Callers hold s.mu.
func (s *Server) ensureInstallation(account string) *installation {
	for _, in := range s.installations {
		if strings.EqualFold(in.account, account) {
			return in
		}
	}
	in := &installation{id: s.nextID("installation"), account: account, created: time.Now().UTC().Truncate(time.Second)}
	s.installations[in.id] = in
	return in
}

// InstallationID is the id of the installation that covers a repository, 0 when the app is not installed on it.
func (s *Server) InstallationID(owner, repo string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := s.repos[repoKey(owner, repo)]
	if rs == nil {
		return 0
	}
	return rs.installationID
}

// Uninstall removes a repository from the app's installation; tokens stop working for it.
func (s *Server) Uninstall(owner, repo string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rs := s.repos[repoKey(owner, repo)]; rs != nil {
		rs.installationID = 0
	}
}

// Install adds a repository to the installation of its owner account (created when missing) and returns its id.
func (s *Server) Install(owner, repo string) int64 {
	s.mu.Lock()
	var id int64
	rs := s.repos[repoKey(owner, repo)]
	if rs != nil {
		rs.installationID = s.ensureInstallation(rs.owner).id
		id = rs.installationID
	}
	s.mu.Unlock()
	if rs == nil {
		s.fatalf("install: no repository %s/%s", owner, repo)
	}
	return id
}
