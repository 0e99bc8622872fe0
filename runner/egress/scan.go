package egress

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"unicode/utf8"
)

// Bounds of what the scanner keeps of a request, whatever its size: the strings it reads (a key, a
// tool's type, a tier, the start of a URL), and how deeply it follows the nesting. A key or type
// that the route acts on is short even with every letter escaped (\u0070... is 6 bytes a letter:
// "previous_response_id" is 120), so one past its bound is none of them.
const (
	maxKeyBytes   = 192
	maxModelBytes = 1024
	maxURLPrefix  = 64
	maxDepth      = 256
)

var (
	errNotObject   = errors.New("the request body is not a JSON object")
	errSecondModel = errors.New(`the request names "model" more than once`)
	errLongModel   = fmt.Errorf("the request's model name is longer than %d bytes", maxModelBytes)
	errTooDeep     = fmt.Errorf("the request nests deeper than %d levels", maxDepth)
	errTrailing    = errors.New("the request body goes on after its JSON object")
)

// refusal is why the route refuses a call whose body asks for something it must not forward, and
// what would let it through (Blocked.Fix).
type refusal struct {
	reason, fix string
}

// bodyScan reads a model request's body as it passes through the route: once, a chunk at a time,
// in memory that does not grow with the body (a stack of the objects and arrays open, each with
// the few strings it keeps). It answers every question the route asks of a request:
//   - the model it is for: its top-level "model", named once (a provider might read a second);
//   - whether it asks for something the route must not forward: a Responses call in background
//     mode (see ReasonBackground), state stored at the provider (previous_response_id,
//     conversation, a stored prompt, an item or a file referred to by id), a server tool the
//     profile does not allow or whose cost could not be counted under a budget (tools.go), a
//     service tier Akira has no price for, a URL the provider would fetch (an image or a document
//     given by http(s) URL instead of its bytes);
//   - what the meter needs: whether an allowed tool's uses go uncounted.
//
// It does not validate the JSON (the provider refuses what does not parse); it matches names as
// the most lenient server would, in any case and with escapes decoded. Whatever it decides before
// the body's end is in time: the route answers before sending a request whose decision comes with
// its first bytes, and cuts short, before its last byte, one whose decision comes later, so that
// the provider never gets a request it can act on.
type bodyScan struct {
	protocol, route string
	m               *Model // the profile's model endpoint: its allowed tools and prices
	budget          bool   // the session has a cost budget

	stack     []frame
	inString  bool
	escaped   bool
	capturing bool // the string being read is kept, up to limit bytes
	limit     int
	raw       []byte
	truncated bool
	ended     bool // the top-level object is closed

	modelKeys int
	model     string
	modelRead bool // the first "model" value is read, whatever it was
	tierKeys  int
	tier      string
	tools     []string // the allowed server tools the request offers

	// malformed is set when the body is not one the route can read as a request; refused when it
	// asks for something the route refuses. Either ends the scan. Both are read by the call's
	// other goroutines (the one that answers the client when the upload fails).
	malformed atomic.Pointer[error]
	refused   atomic.Pointer[refusal]
	// unmetered: the request offers an allowed tool whose uses its answer will not state, so the
	// call's cost is an estimate.
	unmetered atomic.Bool
}

// frame is an object or an array the scanner is in.
type frame struct {
	array  bool
	expect byte // 'k' a key, ':' a colon, 'v' a value, ',' a comma or the end
	key    string
	under  string // the key this frame is the value of ("" for an array's element)
	role   frameRole
	typ    string // the object's "type", folded; typBad when unreadable
	flags  frameFlags
}

type frameRole uint8

const (
	roleOther     frameRole = iota
	roleTop                 // the request
	roleToolList            // the request's tools (or a namespace's)
	roleTool                // one of them
	roleExempt              // inside the request's mcp_servers, allowed as a whole
	roleInputList           // a Responses request's input
	roleInputItem           // one of its items
)

type frameFlags uint8

const (
	flagURL         frameFlags = 1 << iota // "url" names something other than data
	flagImageURL                           // "image_url" does
	flagFileURL                            // "file_url" does
	flagFileID                             // a "file_id" string
	flagChildImage                         // an "image_url" object below names a URL
	flagChildFileID                        // a "file" object below holds a file_id
	flagID                                 // an "id" string
)

// typBad is the type of an object whose type the scanner could not read (too long, not a string it
// can decode): no tool it knows.
const typBad = "\x00"

func newBodyScan(m *Model, route string, budget bool) *bodyScan {
	return &bodyScan{protocol: m.Protocol, route: route, m: m, budget: budget}
}

// done says the scan has decided: the body is refused, or is not a request.
func (s *bodyScan) done() bool { return s.malformed.Load() != nil || s.refused.Load() != nil }

// invalid is why the body is not one the route can read as a request, nil while it may be.
func (s *bodyScan) invalid() error {
	if p := s.malformed.Load(); p != nil {
		return *p
	}
	return nil
}

// settled says the scanner knows the model the request asks for, or that there is none to know,
// or that the request is refused.
func (s *bodyScan) settled() bool { return s.modelRead || s.ended || s.done() }

// failure is why the scan ended the body, nil while it goes on.
func (s *bodyScan) failure() error {
	if err := s.invalid(); err != nil {
		return err
	}
	if r := s.refused.Load(); r != nil {
		return errRefusedBody
	}
	return nil
}

var errRefusedBody = errors.New("egress: the request asks for something the model route refuses")

func (s *bodyScan) fail(err error) {
	if !s.done() {
		s.malformed.Store(&err)
	}
}

func (s *bodyScan) refuse(reason, fix string) {
	if !s.done() {
		s.refused.Store(&refusal{reason: reason, fix: fix})
	}
}

// feed reads the next bytes of the body.
func (s *bodyScan) feed(b []byte) {
	for i := 0; i < len(b); i++ {
		if s.done() {
			return
		}
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
				return
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
					s.endString()
				} else {
					s.top().expect = ','
				}
				continue
			}
			if s.capturing {
				if len(s.raw) < s.limit {
					s.raw = append(s.raw, c)
				} else {
					s.truncated = true
				}
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		s.token(c)
	}
}

func (s *bodyScan) top() *frame {
	if len(s.stack) == 0 {
		return nil
	}
	return &s.stack[len(s.stack)-1]
}

// token reads a byte outside strings.
func (s *bodyScan) token(c byte) {
	f := s.top()
	if f == nil {
		switch {
		case s.ended:
			s.fail(errTrailing)
		case c != '{':
			s.fail(errNotObject)
		default:
			s.push(false, "")
		}
		return
	}
	switch {
	case !f.array && f.expect == 'k':
		switch c {
		case '"':
			s.startString(maxKeyBytes)
		case '}':
			s.pop()
		}
	case !f.array && f.expect == ':':
		if c == ':' {
			f.expect = 'v'
		}
	case f.expect == ',':
		switch {
		case c == ',' && f.array:
			f.expect = 'v'
		case c == ',':
			f.expect = 'k'
		case c == '}' && !f.array, c == ']' && f.array:
			s.pop()
		}
	case f.expect == 'v':
		if f.array && c == ']' {
			s.pop()
			return
		}
		limit := s.valueStart(f, c)
		switch c {
		case '"':
			s.startString(limit)
		case '{', '[':
			under := ""
			if !f.array {
				under = f.key
			}
			s.push(c == '[', under)
		default:
			// A number, true, false or null: read up to the comma.
			f.expect = ','
		}
	}
}

func (s *bodyScan) startString(limit int) {
	s.inString, s.capturing, s.limit, s.raw, s.truncated = true, limit > 0, limit, s.raw[:0], false
}

func (s *bodyScan) push(array bool, under string) {
	if len(s.stack) >= maxDepth {
		s.fail(errTooDeep)
		return
	}
	parent := s.top()
	role := roleOther
	switch {
	case parent == nil:
		role = roleTop
	case parent.role == roleExempt || parent.role == roleTop && fold(under) == "mcp_servers":
		role = roleExempt
	case array && (parent.role == roleTop || parent.role == roleTool) && fold(under) == "tools":
		role = roleToolList
	case !array && parent.role == roleToolList:
		role = roleTool
	case array && parent.role == roleTop && fold(under) == "input":
		role = roleInputList
	case !array && parent.role == roleInputList:
		role = roleInputItem
	}
	expect := byte('k')
	if array {
		expect = 'v'
	}
	s.stack = append(s.stack, frame{array: array, expect: expect, under: under, role: role})
}

func (s *bodyScan) pop() {
	f := s.stack[len(s.stack)-1]
	s.stack = s.stack[:len(s.stack)-1]
	s.closed(&f)
	if parent := s.top(); parent != nil {
		parent.expect = ','
		return
	}
	s.ended = true
	s.final()
}

// endString ends a string that was kept: a key, or a value.
func (s *bodyScan) endString() {
	f := s.top()
	text, ok := decodeString(s.raw, s.truncated)
	if f.expect == 'k' {
		f.key, f.expect = "", ':'
		if ok {
			f.key = text
		}
		if f.role == roleTop && fold(f.key) == "model" {
			if s.modelKeys++; s.modelKeys > 1 {
				s.fail(errSecondModel)
			}
		}
		return
	}
	s.stringValue(f, text, ok)
	f.expect = ','
}

// decodeString decodes a kept string's bytes. Of one cut short (truncated) it decodes what it can,
// for a prefix, and says it is not the whole.
func decodeString(raw []byte, truncated bool) (string, bool) {
	if !truncated && bytes.IndexByte(raw, '\\') < 0 {
		return string(raw), true
	}
	var text string
	for cut := len(raw); cut >= 0 && cut >= len(raw)-6; cut-- {
		if json.Unmarshal(append(append([]byte{'"'}, raw[:cut]...), '"'), &text) == nil {
			return text, !truncated && cut == len(raw)
		}
		if !truncated {
			break
		}
	}
	return "", false
}

// fold is a name as the most lenient servers compare names: in any case, the letters that fold
// together (ſ and s, K and k) as one.
func fold(name string) string {
	for i := 0; i < len(name); i++ {
		if name[i] >= utf8.RuneSelf {
			return strings.ToLower(strings.ToUpper(name))
		}
	}
	return strings.ToLower(name)
}

// valueStart sees the first byte of a value in f and returns how much of it to keep when it is a
// string (0: none).
func (s *bodyScan) valueStart(f *frame, c byte) int {
	if f.array {
		return 0
	}
	key := fold(f.key)
	null := c == 'n'
	if f.role == roleTop {
		switch key {
		case "model":
			if s.modelKeys == 1 && !s.modelRead {
				if c == '"' {
					return maxModelBytes
				}
				s.modelRead = true
			}
			return 0
		case "service_tier":
			if s.tierKeys++; s.tierKeys > 1 {
				s.refuse(reasonTier("named more than once"), "name service_tier once")
			} else if c == '"' {
				return maxKeyBytes
			} else if !null {
				s.refuse(reasonTier("not a string"), "send service_tier as one of the provider's tier names")
			}
			return 0
		}
		if !null {
			s.topMember(key, c)
		}
		return 0
	}
	switch key {
	case "type", "url", "image_url", "file_url":
		if c == '"' {
			if key == "type" {
				return maxKeyBytes
			}
			return maxURLPrefix
		}
	case "file_id":
		if c == '"' {
			if fold(f.under) == "file" {
				s.refuse(reasonStored("a file referred to by its id"), fixStored)
			}
			f.flags |= flagFileID
		}
	case "id":
		if c == '"' {
			f.flags |= flagID
		}
	}
	return 0
}

// topMember sees a member of the request, not null, whose value starts with c.
func (s *bodyScan) topMember(key string, c byte) {
	responses := s.protocol == ProtocolOpenAI && strings.HasSuffix(s.route, "/responses")
	switch {
	case responses && key == "background" && c != 'f':
		s.refuse(ReasonBackground, "call without background (the proxy meters the answer as it comes)")
	case responses && (key == "previous_response_id" || key == "conversation" || key == "prompt"):
		s.refuse(reasonStored(key), fixStored)
	case s.protocol == ProtocolOpenAI && key == "web_search_options":
		s.serverTool("web_search", key)
	case s.protocol == ProtocolAnthropic && key == "mcp_servers":
		s.serverTool("mcp", key)
	case s.protocol == ProtocolAnthropic && key == "container":
		s.serverTool("code_execution", key)
	}
}

// stringValue sees a string value that was kept; ok is false when it could not be read whole.
func (s *bodyScan) stringValue(f *frame, text string, ok bool) {
	key := fold(f.key)
	if f.role == roleTop {
		switch key {
		case "model":
			s.modelRead = true
			switch {
			case !ok && s.truncated:
				s.fail(errLongModel)
			case ok:
				s.model = text
			}
		case "service_tier":
			s.tier = fold(text)
			if !ok {
				s.tier = typBad
			}
		}
		return
	}
	switch key {
	case "type":
		// A second type is read as none Akira knows: servers differ on which of the two they take.
		if f.typ == "" && ok {
			f.typ = fold(text)
		} else {
			f.typ = typBad
		}
	case "url", "image_url", "file_url":
		if isData(text) {
			return
		}
		switch key {
		case "url":
			f.flags |= flagURL
		case "image_url":
			f.flags |= flagImageURL
		default:
			f.flags |= flagFileURL
		}
	}
}

// isData says whether a URL (its start, as kept) carries its content itself: the only kind the
// provider does not fetch.
func isData(url string) bool {
	url = strings.TrimLeft(url, " \t\r\n")
	return len(url) >= 5 && strings.EqualFold(url[:5], "data:")
}

// closed sees an object or array end.
func (s *bodyScan) closed(f *frame) {
	if f.array {
		return
	}
	if f.role == roleTool {
		s.tool(f)
	}
	if f.role != roleExempt {
		// The shapes in which a provider fetches what a URL names (Anthropic's url sources of images
		// and documents; OpenAI's input_image, input_file and Chat Completions' image_url parts) or
		// reads what an id names. A type that could not be read counts as any of them.
		anyType := f.typ == typBad
		anthropic := s.protocol == ProtocolAnthropic
		switch {
		case f.flags&flagURL != 0 && anthropic && (f.typ == "url" || anyType),
			f.flags&flagImageURL != 0 && !anthropic && (f.typ == "input_image" || anyType),
			f.flags&flagFileURL != 0 && !anthropic && (f.typ == "input_file" || anyType),
			f.flags&flagChildImage != 0 && !anthropic && (f.typ == "image_url" || anyType):
			s.refuse(ReasonFetchedURL, "send the image or document itself (base64, or a data: URL)")
		case f.flags&(flagFileID|flagChildFileID) != 0 && (anyType || slices.Contains([]string{"file", "input_file", "input_image", "container_upload"}, f.typ)):
			s.refuse(reasonStored("a file referred to by its id"), fixStored)
		case f.typ == "item_reference",
			f.role == roleInputItem && f.typ == "" && f.flags&flagID != 0:
			s.refuse(reasonStored("an item referred to by its id"), fixStored)
		}
	}
	if parent := s.top(); parent != nil && !parent.array {
		switch fold(f.under) {
		case "image_url":
			if f.flags&flagURL != 0 {
				parent.flags |= flagChildImage
			}
		case "file":
			if f.flags&flagFileID != 0 {
				parent.flags |= flagChildFileID
			}
		}
	}
}

// tool sees one of the request's tools whole.
func (s *bodyScan) tool(f *frame) {
	name, plain := classifyTool(s.protocol, f.typ)
	switch {
	case plain:
		return
	case name == "":
		typ := f.typ
		if typ == typBad {
			typ = "(unreadable)"
		}
		s.refuse(fmt.Sprintf("tool type %q: not a tool the client runs, nor a provider-side tool Akira knows", typ),
			"nothing: only the CLI's own tools and the provider-side tools Akira knows (and the operator allows) pass")
	default:
		s.serverTool(name, f.typ)
	}
}

// serverTool sees the request offer a server tool (name), written as what (its type, or the member
// that asks for it).
func (s *bodyScan) serverTool(name, what string) {
	if !slices.Contains(s.m.ServerTools, name) {
		s.refuse(reasonServerTool(name, what), fmt.Sprintf("server_tools: [%q] in the agent's profile, in the operator's config; or run the CLI without it%s",
			name, codexHint(s.protocol, name)))
		return
	}
	if !slices.Contains(s.tools, name) {
		s.tools = append(s.tools, name)
	}
}

func codexHint(protocol, tool string) string {
	if protocol == ProtocolOpenAI && tool == "web_search" {
		return " (Codex: -c web_search=disabled)"
	}
	return ""
}

// final sees the request whole: what depends on the model it asks for (the price of a service tier
// or of a tool's uses) is decided now, before its last byte goes.
func (s *bodyScan) final() {
	model := s.model
	if model == "" {
		model = s.m.Model
	}
	for _, tool := range s.tools {
		if tokensOnly(tool) {
			continue
		}
		_, priced := s.m.perUse(model, tool)
		if countedUses(s.protocol, s.route, tool) && priced {
			continue
		}
		if s.budget {
			why := "its uses are not stated in the answers, so they cannot be metered"
			fix := "nothing while the run has a cost budget"
			if countedUses(s.protocol, s.route, tool) {
				why = fmt.Sprintf("a use has no price for model %q", model)
				fix = fmt.Sprintf("prices: {%q: {per_use: {%s: …}}} in the operator's config", model, tool)
			}
			s.refuse(fmt.Sprintf("provider-side tool %s under a cost budget: %s", tool, why), fix)
			return
		}
		s.unmetered.Store(true)
	}
	switch {
	case s.tier == typBad:
		s.refuse(reasonTier("unreadable"), "send service_tier as one of the provider's tier names")
	case !standardTier(s.tier):
		if _, ok := s.m.tariff(model).Tiers[s.tier]; !ok {
			s.refuse(reasonTier(fmt.Sprintf("%q has no price for model %q", s.tier, model)),
				fmt.Sprintf("prices: {%q: {tiers: {%s: {input_per_mtok: …, output_per_mtok: …}}}} in the operator's config", model, s.tier))
		}
	}
}

// Why the model route refuses a call for what its body asks, as its report says.
const (
	// ReasonBackground: a Responses call in background mode answers before the model has
	// generated anything and states no usage, while the provider goes on generating (and billing)
	// on its side, where the proxy never sees it.
	ReasonBackground = "background mode: the answer states no usage of what the provider goes on generating"
	// ReasonUnreadable: the body is compressed, or a form: the route could not read it as it
	// passes.
	ReasonUnreadable = "a request body the route cannot read (it must be uncompressed JSON)"
	// ReasonFetchedURL: an image or a document given by URL is fetched by the provider, from
	// outside the sandbox and past the egress allowlist.
	ReasonFetchedURL = "a URL the provider would fetch: it reaches the web from outside the sandbox, past the egress allowlist"
	// ReasonWebSocket: what passes over a WebSocket is not metered.
	ReasonWebSocket = "a WebSocket upgrade: what passes over it is not metered (the CLI falls back to HTTP)"
)

const fixStored = "nothing: send the whole conversation in the request (store: false and no previous_response_id, as Codex does)"

func reasonServerTool(name, what string) string {
	return fmt.Sprintf("provider-side tool %s (%s): it runs outside the sandbox, past the egress allowlist, and bills per use", name, what)
}

func reasonStored(what string) string {
	return what + ": state stored at the provider, which would carry data from one run to another"
}

func reasonTier(why string) string { return "service tier " + why }
