package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Token scopes: read sees runs, queues and logs; control may also stop, abort and decide.
const (
	ScopeRead    = "read"
	ScopeControl = "control"
)

// ErrBadToken is returned for a token Akira does not know (or one revoked).
var ErrBadToken = errors.New("jobs: unknown API token")

// Token is an operator's API token, without its secret.
type Token struct {
	// ID is the token's identity, derived from its secret (the start of its TokenHash): a token
	// revoked and created again under the same name is another token. What a token's requests
	// leave behind (its Idempotency-Keys) is keyed by it, never by the name. Not stored.
	ID      string    `json:"-"`
	Name    string    `json:"name"`
	Scope   string    `json:"scope"`
	Created time.Time `json:"created"`
	// Repos limits the token to these repositories ("owner/name"); none: every repository.
	Repos []string `json:"repos,omitempty"`
}

// CanControl says the token may act on runs.
func (t Token) CanControl() bool { return t.Scope == ScopeControl }

var tokenNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

func tokenHash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

func (s *Keyring) tokensKey() string { return s.prefix + "tokens" }

func (s *Keyring) tokenNamesKey() string { return s.prefix + "token-names" }

// Actor is who changes the tokens, for the audit: a person's name and the way they came (ViaCLI
// for `akira token`). The zero Actor is the operator at the command line.
type Actor struct {
	Name string
	Via  string
}

func (a Actor) orOperator() Actor {
	if a.Name == "" {
		a.Name = "operator"
	}
	if a.Via == "" {
		a.Via = ViaCLI
	}
	return a
}

// CreateToken makes a token and returns its secret, which is shown once and never kept.
func (s *Keyring) CreateToken(ctx context.Context, name, scope string) (string, error) {
	return s.createToken(ctx, Actor{}, name, scope, nil)
}

func (s *Keyring) createToken(ctx context.Context, by Actor, name, scope string, repos []string) (string, error) {
	if !tokenNameRE.MatchString(name) {
		return "", fmt.Errorf("token name %q: use letters, digits, '.', '_' and '-' (at most 64)", name)
	}
	if scope != ScopeRead && scope != ScopeControl && scope != ScopeStart {
		return "", fmt.Errorf("token scope %q: want read, start or control", scope)
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("jobs: token: %w", err)
	}
	secret := "akira_" + hex.EncodeToString(b)
	hash := tokenHash(secret)
	data, _ := json.Marshal(Token{Name: name, Scope: scope, Created: s.now().UTC(), Repos: repos})
	// One name, one token: HSETNX on the name refuses a second token of the same name atomically.
	ok, err := s.rdb.HSetNX(ctx, s.tokenNamesKey(), name, hash).Result()
	if err != nil {
		return "", fmt.Errorf("jobs: token: %w", err)
	}
	if !ok {
		return "", fmt.Errorf("a token named %q exists: revoke it first", name)
	}
	by = by.orOperator()
	where := "every repository"
	if len(repos) > 0 {
		where = strings.Join(repos, ", ")
	}
	// The token and its audit entry in one MULTI: no token exists that the audit does not show.
	if _, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, s.tokensKey(), hash, data)
		s.audit.queueAudit(ctx, p, AuditEntry{Actor: by.Name, Via: by.Via, Action: ActionTokenCreate, Target: "token:" + name,
			Result: "created (" + scope + ", " + where + ")"})
		return nil
	}); err != nil {
		return "", fmt.Errorf("jobs: token: %w", err)
	}
	return secret, nil
}

// TokenFor finds the token of a secret.
func (s *Keyring) TokenFor(ctx context.Context, secret string) (Token, error) {
	if !strings.HasPrefix(secret, "akira_") {
		return Token{}, ErrBadToken
	}
	return s.TokenByHash(ctx, TokenHash(secret))
}

// TokenHash is what identifies a token without being one (a dashboard session holds it).
func TokenHash(secret string) string { return tokenHash(secret) }

// TokenByHash finds a token by TokenHash: a revoked token's sessions end with it.
func (s *Keyring) TokenByHash(ctx context.Context, hash string) (Token, error) {
	data, err := s.rdb.HGet(ctx, s.tokensKey(), hash).Bytes()
	if errors.Is(err, redis.Nil) {
		return Token{}, ErrBadToken
	}
	if err != nil {
		return Token{}, fmt.Errorf("jobs: token: %w", err)
	}
	var t Token
	if err := json.Unmarshal(data, &t); err != nil {
		return Token{}, fmt.Errorf("jobs: token: %w", err)
	}
	t.ID = tokenID(hash)
	return t, nil
}

// tokenID is a token's ID: 128 bits of its hash, enough to tell tokens apart and not a secret.
func tokenID(hash string) string { return hash[:min(len(hash), 32)] }

// Tokens lists the tokens, by name.
func (s *Keyring) Tokens(ctx context.Context) ([]Token, error) {
	all, err := s.rdb.HGetAll(ctx, s.tokensKey()).Result()
	if err != nil {
		return nil, fmt.Errorf("jobs: tokens: %w", err)
	}
	var out []Token
	for hash, data := range all {
		var t Token
		if json.Unmarshal([]byte(data), &t) == nil {
			t.ID = tokenID(hash)
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// RevokeToken deletes the token of a name; it reports whether there was one.
func (s *Keyring) RevokeToken(ctx context.Context, name string) (bool, error) {
	return s.RevokeTokenBy(ctx, Actor{}, name)
}

// RevokeTokenBy is RevokeToken, audited as done by by.
func (s *Keyring) RevokeTokenBy(ctx context.Context, by Actor, name string) (bool, error) {
	by = by.orOperator()
	hash, err := s.rdb.HGet(ctx, s.tokenNamesKey(), name).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("jobs: token: %w", err)
	}
	if _, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HDel(ctx, s.tokensKey(), hash)
		p.HDel(ctx, s.tokenNamesKey(), name)
		s.audit.queueAudit(ctx, p, AuditEntry{Actor: by.Name, Via: by.Via, Action: ActionTokenRevoke, Target: "token:" + name, Result: "revoked"})
		return nil
	}); err != nil {
		return false, fmt.Errorf("jobs: token: %w", err)
	}
	return true, nil
}

// SessionKey is the key that signs dashboard sessions and their CSRF tokens: made once, shared by
// every web process through Redis, so a session works whichever replica answers.
func (s *Keyring) SessionKey(ctx context.Context) ([]byte, error) {
	key := s.prefix + "session-key"
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("jobs: session key: %w", err)
	}
	if err := s.rdb.SetNX(ctx, key, hex.EncodeToString(b), 0).Err(); err != nil {
		return nil, fmt.Errorf("jobs: session key: %w", err)
	}
	v, err := s.rdb.Get(ctx, key).Result()
	if err != nil {
		return nil, fmt.Errorf("jobs: session key: %w", err)
	}
	return hex.DecodeString(v)
}

// ScopeStart may read runs and start them, but neither stop nor decide.
const ScopeStart = "start"

// CanStart says the token may start runs.
func (t Token) CanStart() bool { return t.Scope == ScopeControl || t.Scope == ScopeStart }

// Allows says the token may act on the repository "owner/name": a token without repositories
// covers every repository.
func (t Token) Allows(repo string) bool {
	if len(t.Repos) == 0 {
		return true
	}
	return slices.ContainsFunc(t.Repos, func(r string) bool { return strings.EqualFold(r, repo) })
}

var repoNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}$`)

// ValidRepoName reports whether s is "owner/name" as GitHub spells them.
func ValidRepoName(s string) bool {
	return repoNameRE.MatchString(s) && !strings.HasSuffix(s, "/.") && !strings.HasSuffix(s, "/..")
}

// CreateTokenFor makes a token limited to repositories ("owner/name"; none: every repository).
func (s *Keyring) CreateTokenFor(ctx context.Context, name, scope string, repos []string) (string, error) {
	return s.CreateTokenBy(ctx, Actor{}, name, scope, repos)
}

// CreateTokenBy is CreateTokenFor, audited as done by by.
func (s *Keyring) CreateTokenBy(ctx context.Context, by Actor, name, scope string, repos []string) (string, error) {
	for _, r := range repos {
		if !ValidRepoName(r) {
			return "", fmt.Errorf("token repository %q: want owner/name", r)
		}
	}
	return s.createToken(ctx, by, name, scope, repos)
}
