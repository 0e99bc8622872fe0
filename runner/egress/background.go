package egress

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync/atomic"
)

// ReasonBackground is why the model route refuses a Responses call in background mode: its answer
// comes before the model has generated anything and states no usage, while the provider goes on
// generating (and billing) on its side, where the proxy never sees it.
const ReasonBackground = "background mode: the answer states no usage of what the provider goes on generating"

// ReasonUnreadable is why the model route refuses a Responses call whose body it cannot read as it
// passes (compressed, or a form): it could not tell whether it asks for background mode.
const ReasonUnreadable = "a request body the route cannot read (it must be uncompressed JSON)"

// watchesBackground says whether a call may ask for background mode, which the route must see.
func watchesBackground(protocol, method, route string) bool {
	return protocol == ProtocolOpenAI && method == http.MethodPost && strings.HasSuffix(route, "/responses")
}

// readableJSON says whether a request's body is one the route reads as it passes: not compressed,
// and not declared a form, which a server might read otherwise than as JSON. Any other body is
// read as JSON, as the provider reads it whatever its Content-Type says.
func readableJSON(r *http.Request) bool {
	if enc := r.Header.Get("Content-Encoding"); enc != "" && !strings.EqualFold(enc, "identity") {
		return false
	}
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt != "application/x-www-form-urlencoded" && !strings.HasPrefix(mt, "multipart/")
}

var errBackground = errors.New("egress: a Responses call in background mode")

// backgroundWatch passes a Responses request body on while it watches for a top-level
// "background" member that is not false or null. Each chunk is looked at before it goes on, and
// the chunk that holds such a member's value never goes: the provider gets a body cut short, which
// it cannot act on, and the route answers the agent itself.
type backgroundWatch struct {
	body  io.ReadCloser
	scan  memberScanner
	found *atomic.Bool
}

func (b *backgroundWatch) Read(p []byte) (int, error) {
	if b.found.Load() {
		return 0, errBackground
	}
	n, err := b.body.Read(p)
	if b.scan.feed(p[:n]) {
		b.found.Store(true)
		return 0, errBackground
	}
	return n, err
}

func (b *backgroundWatch) Close() error { return b.body.Close() }

// maxKeyBytes bounds what the scanner keeps of a key: "background" spelled with every letter
// escaped (\u0062...) is 60 bytes.
const maxKeyBytes = 128

// memberScanner reads JSON a chunk at a time, in constant memory, and reports a member of the
// top-level object named name (in any case, escapes decoded, every time it occurs) whose value is
// anything but false or null. It does not validate the JSON: the provider refuses what does not
// parse.
type memberScanner struct {
	name string

	depth             int
	object            bool // the top-level value is an object
	inString, escaped bool
	wantKey, wantVal  bool // at the top level: the next string is a key, the next token a value
	capturing         bool // the string being read is a top-level key
	key               []byte
	keyTooLong        bool
	current           string // the key whose value comes next
}

// feed reads the next bytes and reports whether the member was found in them.
func (s *memberScanner) feed(b []byte) bool {
	for i := 0; i < len(b); i++ {
		if s.inString && !s.escaped && !s.capturing {
			// Most of a request is text inside strings: skip to where one may end.
			rest := b[i:]
			j := bytes.IndexByte(rest, '"')
			if j < 0 {
				j = len(rest)
			}
			if k := bytes.IndexByte(rest[:j], '\\'); k >= 0 {
				j = k
			}
			if j == len(rest) {
				return false
			}
			i += j
		}
		c := b[i]
		if s.inString {
			switch {
			case s.escaped:
				s.escaped = false
			case c == '\\':
				s.escaped = true
			case c == '"':
				s.inString = false
				if s.capturing {
					s.capturing = false
					s.current = s.keyName()
				}
				continue
			}
			if s.capturing {
				if len(s.key) < maxKeyBytes {
					s.key = append(s.key, c)
				} else {
					s.keyTooLong = true
				}
			}
			continue
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		if s.wantVal {
			s.wantVal = false
			if strings.EqualFold(s.current, s.name) && c != 'f' && c != 'n' {
				return true
			}
		}
		switch c {
		case '"':
			s.inString = true
			if s.depth == 1 && s.object && s.wantKey {
				s.wantKey, s.capturing, s.key, s.keyTooLong = false, true, s.key[:0], false
			}
		case '{', '[':
			s.depth++
			if s.depth == 1 {
				s.object, s.wantKey = c == '{', c == '{'
			}
		case '}', ']':
			s.depth--
		case ':':
			if s.depth == 1 && s.object {
				s.wantVal = true
			}
		case ',':
			if s.depth == 1 && s.object {
				s.wantKey, s.current = true, ""
			}
		}
	}
	return false
}

// keyName is the key just read, its escapes decoded.
func (s *memberScanner) keyName() string {
	if s.keyTooLong {
		return ""
	}
	var name string
	if json.Unmarshal([]byte(`"`+string(s.key)+`"`), &name) != nil {
		return ""
	}
	return name
}
