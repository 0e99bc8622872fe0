package githubtest

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// OpenAPISubsetPath finds GitHub's OpenAPI subset (shared/fixtures/github/openapi/subset.json) in a "shared"
// folder beside the working directory or one of its parents. It reports false when there is none; callers
// then skip their conformance checks.
func OpenAPISubsetPath() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		p := filepath.Join(dir, "shared", "fixtures", "github", "openapi", "subset.json")
		if _, err := os.Stat(p); err == nil {
			return p, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

type specOp struct {
	method, path, id string
	segs             []string
	multi            map[string]bool // path parameters that may span segments
	query            map[string]bool // declared query parameters
	body             any             // JSON schema of the request body, nil when none
	statuses         []string
}

type spec struct {
	root map[string]any
	ops  []*specOp
}

var specCache sync.Map // path → *spec

func loadSpec(path string) (*spec, error) {
	if v, ok := specCache.Load(path); ok {
		return v.(*spec), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	var root map[string]any
	if err := json.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("openapi: parse %s: %w", filepath.Base(path), err)
	}
	for _, extra := range [][]byte{ciSpec, gitSpec} {
		if err := mergeSpec(root, extra); err != nil {
			return nil, err
		}
	}
	sp := &spec{root: root}
	paths, _ := root["paths"].(map[string]any)
	for p, item := range paths {
		item, _ := item.(map[string]any)
		for method, op := range item {
			op, ok := op.(map[string]any)
			if !ok || !slices.Contains([]string{"get", "post", "patch", "put", "delete"}, method) {
				continue
			}
			o := &specOp{method: strings.ToUpper(method), path: p, segs: strings.Split(strings.Trim(p, "/"), "/"),
				multi: map[string]bool{}, query: map[string]bool{}}
			o.id, _ = op["operationId"].(string)
			params, _ := op["parameters"].([]any)
			if common, ok := item["parameters"].([]any); ok {
				params = append(params, common...)
			}
			for _, prm := range params {
				prm, _ := sp.resolve(prm).(map[string]any)
				name, _ := prm["name"].(string)
				switch prm["in"] {
				case "path":
					if m, _ := prm["x-multi-segment"].(bool); m {
						o.multi[name] = true
					}
				case "query":
					o.query[name] = true
				}
			}
			if rb, ok := sp.resolve(op["requestBody"]).(map[string]any); ok {
				content, _ := rb["content"].(map[string]any)
				if js, ok := content["application/json"].(map[string]any); ok {
					o.body = js["schema"]
				}
			}
			responses, _ := op["responses"].(map[string]any)
			for code := range responses {
				o.statuses = append(o.statuses, code)
			}
			sp.ops = append(sp.ops, o)
		}
	}
	sort.Slice(sp.ops, func(i, j int) bool { return sp.ops[i].path+sp.ops[i].method < sp.ops[j].path+sp.ops[j].method })
	specCache.Store(path, sp)
	return sp, nil
}

// resolve follows internal $refs ("#/components/...").
func (sp *spec) resolve(v any) any {
	for i := 0; i < 32; i++ {
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return v
		}
		var cur any = sp.root
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
			cm, _ := cur.(map[string]any)
			cur = cm[part]
		}
		v = cur
	}
	return v
}

// match reports whether a request path fits the operation's template and how many literal segments it
// matched, so the most specific template wins.
func (o *specOp) match(path string) (int, bool) {
	// Only the leading slash goes: a trailing one is an empty multi-segment value (contents of the root).
	return matchSegs(o.segs, strings.Split(strings.TrimPrefix(path, "/"), "/"), o.multi)
}

func matchSegs(tmpl, segs []string, multi map[string]bool) (int, bool) {
	if len(tmpl) == 0 {
		return 0, len(segs) == 0
	}
	t := tmpl[0]
	name, isParam := strings.CutPrefix(t, "{")
	name = strings.TrimSuffix(name, "}")
	if isParam && multi[name] {
		// A multi-segment value takes one or more segments (an empty one included: contents of the root).
		for n := len(segs); n >= 1; n-- {
			if lit, ok := matchSegs(tmpl[1:], segs[n:], multi); ok {
				return lit, true
			}
		}
		return 0, false
	}
	if len(segs) == 0 || (isParam && segs[0] == "") || (!isParam && segs[0] != t) {
		return 0, false
	}
	lit, ok := matchSegs(tmpl[1:], segs[1:], multi)
	if !isParam {
		lit++
	}
	return lit, ok
}

func (sp *spec) find(method, path string) *specOp {
	var best *specOp
	bestLit := -1
	for _, o := range sp.ops {
		if o.method != method {
			continue
		}
		if lit, ok := o.match(path); ok && lit > bestLit {
			best, bestLit = o, lit
		}
	}
	return best
}

// CheckRequestsAgainstOpenAPI checks recorded requests against GitHub's OpenAPI description: each REST request
// must match an operation (method and path template, multi-segment parameters included), use only query
// parameters the operation declares, carry the request-body fields its JSON schema requires (nested objects,
// array items and the oneOf/anyOf branches included, $refs resolved), and, when it succeeded, have a status the
// operation documents. Git smart HTTP and GraphQL requests are skipped.
func CheckRequestsAgainstOpenAPI(t testing.TB, specPath string, reqs []Request) {
	t.Helper()
	sp, err := loadSpec(specPath)
	if err != nil {
		t.Fatalf("githubtest: %v", err)
	}
	for _, r := range reqs {
		if gitPathRE.MatchString(r.Path) || r.Path == "/graphql" || r.Path == "/api/graphql" {
			continue
		}
		for _, msg := range sp.check(r) {
			t.Errorf("githubtest: %s %s: %s", r.Method, r.Path, msg)
		}
	}
}

func (sp *spec) check(r Request) []string {
	o := sp.find(r.Method, r.Path)
	if o == nil {
		return []string{"no such operation in the OpenAPI description"}
	}
	var errs []string
	for k := range r.Query {
		if !o.query[k] {
			errs = append(errs, fmt.Sprintf("%s: query parameter %q is not declared", o.id, k))
		}
	}
	if r.Status/100 == 2 && !slices.Contains(o.statuses, strconv.Itoa(r.Status)) {
		errs = append(errs, fmt.Sprintf("%s: status %d is not documented (%v)", o.id, r.Status, o.statuses))
	}
	if o.body == nil {
		return errs
	}
	body := strings.TrimSpace(string(r.Body))
	if body == "" {
		if req := sp.requiredOf(o.body); len(req) > 0 {
			errs = append(errs, fmt.Sprintf("%s: empty body, required %v", o.id, req))
		}
		return errs
	}
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		return append(errs, fmt.Sprintf("%s: body is not JSON: %v", o.id, err))
	}
	for _, e := range sp.validate(o.body, v, "body") {
		errs = append(errs, o.id+": "+e)
	}
	return errs
}

func (sp *spec) requiredOf(schema any) []string {
	m, _ := sp.resolve(schema).(map[string]any)
	var out []string
	req, _ := m["required"].([]any)
	for _, k := range req {
		out = append(out, fmt.Sprint(k))
	}
	return out
}

// validate checks required fields and enums, the parts of a schema that catch a client sending the wrong
// request; types and formats are left to the server.
func (sp *spec) validate(schema, v any, at string) []string {
	m, ok := sp.resolve(schema).(map[string]any)
	if !ok {
		return nil
	}
	var errs []string
	if enum, ok := m["enum"].([]any); ok && v != nil {
		if _, isObj := v.(map[string]any); !isObj && !slices.ContainsFunc(enum, func(e any) bool { return e == v }) {
			errs = append(errs, fmt.Sprintf("%s: %v is not one of %v", at, v, enum))
		}
	}
	for _, sub := range anyList(m["allOf"]) {
		errs = append(errs, sp.validate(sub, v, at)...)
	}
	for _, key := range []string{"oneOf", "anyOf"} {
		branches := anyList(m[key])
		if len(branches) == 0 {
			continue
		}
		var first []string
		matched := false
		for i, b := range branches {
			be := sp.validate(b, v, at)
			if len(be) == 0 {
				matched = true
				break
			}
			if i == 0 {
				first = be
			}
		}
		if !matched {
			errs = append(errs, fmt.Sprintf("%s: matches no %s branch (first: %s)", at, key, strings.Join(first, "; ")))
		}
	}
	switch val := v.(type) {
	case map[string]any:
		for _, k := range sp.requiredOf(m) {
			if _, ok := val[k]; !ok {
				errs = append(errs, fmt.Sprintf("%s: missing required field %q", at, k))
			}
		}
		props, _ := m["properties"].(map[string]any)
		for k, pv := range val {
			if ps, ok := props[k]; ok {
				errs = append(errs, sp.validate(ps, pv, at+"."+k)...)
			}
		}
	case []any:
		if items, ok := m["items"]; ok {
			for i, iv := range val {
				errs = append(errs, sp.validate(items, iv, fmt.Sprintf("%s[%d]", at, i))...)
			}
		}
	}
	return errs
}

func anyList(v any) []any {
	l, _ := v.([]any)
	return l
}

// ciSpec describes the operations of a pull request's own CI that the shared subset lacks (see
// testdata/README.md).
//
//go:embed testdata/openapi-ci.json
var ciSpec []byte

// gitSpec describes the Git database operations (checkpoints GitHub signs) and the branch protection
// signature rule that the shared subset lacks (see testdata/README.md).
//
//go:embed testdata/openapi-git.json
var gitSpec []byte

// mergeSpec adds the paths and components of another extract of the same description to root; a
// component both define must be the same.
func mergeSpec(root map[string]any, extra []byte) error {
	var doc map[string]any
	if err := json.Unmarshal(extra, &doc); err != nil {
		return fmt.Errorf("openapi: parse an extract: %w", err)
	}
	section := func(m map[string]any, key string) map[string]any {
		v, _ := m[key].(map[string]any)
		if v == nil {
			v = map[string]any{}
			m[key] = v
		}
		return v
	}
	paths := section(root, "paths")
	for p, item := range section(doc, "paths") {
		dst := section(paths, p)
		for method, op := range item.(map[string]any) {
			if _, dup := dst[method]; dup && method != "parameters" {
				return fmt.Errorf("openapi: %s %s is in both descriptions", method, p)
			}
			dst[method] = op
		}
	}
	comps := section(root, "components")
	for kind, defs := range section(doc, "components") {
		dst := section(comps, kind)
		for name, def := range defs.(map[string]any) {
			if old, ok := dst[name]; ok {
				a, _ := json.Marshal(old)
				b, _ := json.Marshal(def)
				if string(a) != string(b) {
					return fmt.Errorf("openapi: component %s/%s differs between the descriptions", kind, name)
				}
				continue
			}
			dst[name] = def
		}
	}
	return nil
}

// CheckResponsesAgainstOpenAPI checks the answers the fake gave to recorded requests of the named
// operations against the response schemas of GitHub's description: every field the schema requires is
// there, and every field it describes has its type (null only where the schema allows it), through
// nested objects, array items, $refs and allOf/anyOf/oneOf. Only successful JSON answers are checked.
func CheckResponsesAgainstOpenAPI(t testing.TB, specPath string, reqs []Request, operationIDs ...string) {
	t.Helper()
	sp, err := loadSpec(specPath)
	if err != nil {
		t.Fatalf("githubtest: %v", err)
	}
	checked := map[string]bool{}
	for _, r := range reqs {
		if r.Status/100 != 2 || len(r.Response) == 0 {
			continue
		}
		o := sp.find(r.Method, r.Path)
		if o == nil || !slices.Contains(operationIDs, o.id) {
			continue
		}
		schema := sp.responseSchema(o, r.Status)
		if schema == nil {
			t.Errorf("githubtest: %s %s: %s documents no JSON answer for %d", r.Method, r.Path, o.id, r.Status)
			continue
		}
		var v any
		if err := json.Unmarshal(r.Response, &v); err != nil {
			t.Errorf("githubtest: %s %s: answer is not JSON: %v", r.Method, r.Path, err)
			continue
		}
		checked[o.id] = true
		for _, e := range sp.shape(schema, v, "response", 0) {
			t.Errorf("githubtest: %s %s: %s: %s", r.Method, r.Path, o.id, e)
		}
	}
	for _, id := range operationIDs {
		if !checked[id] {
			t.Errorf("githubtest: no answer of %s was checked", id)
		}
	}
}

// responseSchema is the JSON schema of an operation's answer with a status.
func (sp *spec) responseSchema(o *specOp, status int) any {
	root, _ := sp.root["paths"].(map[string]any)
	item, _ := root[o.path].(map[string]any)
	op, _ := item[strings.ToLower(o.method)].(map[string]any)
	responses, _ := op["responses"].(map[string]any)
	resp, _ := sp.resolve(responses[strconv.Itoa(status)]).(map[string]any)
	content, _ := resp["content"].(map[string]any)
	js, _ := content["application/json"].(map[string]any)
	return js["schema"]
}

// shape checks a value against a schema's types and required fields.
func (sp *spec) shape(schema, v any, at string, depth int) []string {
	m, ok := sp.resolve(schema).(map[string]any)
	if !ok || depth > 24 {
		return nil
	}
	if v == nil {
		if nullable, _ := m["nullable"].(bool); nullable || len(m) == 0 {
			return nil
		}
		if _, hasType := m["type"]; !hasType && m["allOf"] == nil && m["anyOf"] == nil && m["oneOf"] == nil {
			return nil
		}
		// An allOf whose members allow null allows it.
		for _, sub := range anyList(m["allOf"]) {
			if s, _ := sp.resolve(sub).(map[string]any); s != nil {
				if n, _ := s["nullable"].(bool); n {
					return nil
				}
			}
		}
		return []string{at + ": null where the schema does not allow it"}
	}
	var errs []string
	for _, sub := range anyList(m["allOf"]) {
		errs = append(errs, sp.shape(sub, v, at, depth+1)...)
	}
	for _, key := range []string{"oneOf", "anyOf"} {
		branches := anyList(m[key])
		if len(branches) == 0 {
			continue
		}
		var first []string
		matched := false
		for i, b := range branches {
			be := sp.shape(b, v, at, depth+1)
			if len(be) == 0 {
				matched = true
				break
			}
			if i == 0 {
				first = be
			}
		}
		if !matched {
			errs = append(errs, fmt.Sprintf("%s: matches no %s branch (first: %s)", at, key, strings.Join(first, "; ")))
		}
	}
	typ, _ := m["type"].(string)
	ok = true
	switch typ {
	case "string":
		_, ok = v.(string)
	case "boolean":
		_, ok = v.(bool)
	case "integer":
		f, isNum := v.(float64)
		ok = isNum && f == float64(int64(f))
	case "number":
		_, ok = v.(float64)
	case "array":
		_, ok = v.([]any)
	case "object":
		_, ok = v.(map[string]any)
	}
	if !ok {
		return append(errs, fmt.Sprintf("%s: %T where the schema says %s", at, v, typ))
	}
	switch val := v.(type) {
	case map[string]any:
		for _, k := range sp.requiredOf(m) {
			if _, ok := val[k]; !ok {
				errs = append(errs, fmt.Sprintf("%s: missing required field %q", at, k))
			}
		}
		props, _ := m["properties"].(map[string]any)
		for k, pv := range val {
			if ps, ok := props[k]; ok {
				errs = append(errs, sp.shape(ps, pv, at+"."+k, depth+1)...)
			}
		}
	case []any:
		if items, ok := m["items"]; ok {
			for i, iv := range val {
				errs = append(errs, sp.shape(items, iv, fmt.Sprintf("%s[%d]", at, i), depth+1)...)
			}
		}
	}
	return errs
}

// CheckResponseFieldsAgainstOpenAPI is CheckResponsesAgainstOpenAPI for some top-level fields of one
// operation's answers: each must be there with the type the schema gives it. It serves answers the fake
// fills only in part (a pull request), for the fields a test relies on.
func CheckResponseFieldsAgainstOpenAPI(t testing.TB, specPath string, reqs []Request, operationID string, fields ...string) {
	t.Helper()
	sp, err := loadSpec(specPath)
	if err != nil {
		t.Fatalf("githubtest: %v", err)
	}
	checked := 0
	for _, r := range reqs {
		o := sp.find(r.Method, r.Path)
		if r.Status/100 != 2 || len(r.Response) == 0 || o == nil || o.id != operationID {
			continue
		}
		schema, _ := sp.resolve(sp.responseSchema(o, r.Status)).(map[string]any)
		props, _ := schema["properties"].(map[string]any)
		var answer map[string]any
		if err := json.Unmarshal(r.Response, &answer); err != nil {
			t.Errorf("githubtest: %s %s: answer is not a JSON object: %v", r.Method, r.Path, err)
			continue
		}
		checked++
		for _, f := range fields {
			v, ok := answer[f]
			switch {
			case props[f] == nil:
				t.Errorf("githubtest: %s has no field %q", operationID, f)
			case !ok:
				t.Errorf("githubtest: %s %s: %s: no field %q", r.Method, r.Path, operationID, f)
			default:
				for _, e := range sp.shape(props[f], v, "response."+f, 0) {
					t.Errorf("githubtest: %s %s: %s: %s", r.Method, r.Path, operationID, e)
				}
			}
		}
	}
	if checked == 0 {
		t.Errorf("githubtest: no answer of %s was checked", operationID)
	}
}
