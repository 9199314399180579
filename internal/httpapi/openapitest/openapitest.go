// Package openapitest holds the REST API to its OpenAPI 3.1 document in
// tests: Load checks that the document is valid OpenAPI 3.1, and a
// Validator checks requests, responses and webhook deliveries against it.
// It uses pb33f's libopenapi and libopenapi-validator, which validate with
// JSON Schema 2020-12, the dialect of OpenAPI 3.1. Only tests import it.
package openapitest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pb33f/jsonschema/v6"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	liberrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi/datamodel"
)

// Methods are the operation keys of an OpenAPI 3.1 Path Item.
var Methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// Document is a loaded, valid OpenAPI 3.1 document, as decoded JSON.
type Document struct {
	Tree map[string]any
}

// Operation is one documented operation.
type Operation struct {
	Method string // upper case, as on the wire
	Path   string
	// Secured says whether the operation takes a security scheme (its own
	// security, or the document's when it has none).
	Secured bool
	Object  map[string]any
}

// Load parses doc and checks it is valid OpenAPI 3.1:
//   - against the OpenAPI Initiative's JSON Schema of OpenAPI 3.1
//     documents, and with every reference resolved (libopenapi);
//   - every Schema Object against the JSON Schema 2020-12 meta-schema,
//     which that JSON Schema leaves unchecked;
//   - every media type example against its schema;
//   - path parameters against path templates, and operation ids unique,
//     as the OpenAPI specification requires.
func Load(doc []byte) (*Document, error) {
	d := &Document{}
	if err := json.Unmarshal(doc, &d.Tree); err != nil {
		return nil, fmt.Errorf("the OpenAPI document is not a JSON object: %w", err)
	}
	if v, _ := d.Tree["openapi"].(string); !strings.HasPrefix(v, "3.1.") {
		return nil, fmt.Errorf("the document is OpenAPI %q, want 3.1.x", v)
	}
	lib, err := parse(doc)
	if err != nil {
		return nil, fmt.Errorf("parsing the OpenAPI document: %w", err)
	}
	v, errs := validator.NewValidator(lib)
	if len(errs) > 0 {
		return nil, fmt.Errorf("building the OpenAPI document: %w", errors.Join(errs...))
	}
	if ok, problems := v.ValidateDocument(); !ok {
		return nil, fmt.Errorf("the OpenAPI document is not valid OpenAPI 3.1: %w", describe(problems))
	}
	checks := []func() error{d.checkSchemas, d.checkPathParameters, d.checkOperationIDs}
	var all []error
	for _, check := range checks {
		if err := check(); err != nil {
			all = append(all, err)
		}
	}
	if len(all) > 0 {
		return nil, fmt.Errorf("the OpenAPI document is invalid: %w", errors.Join(all...))
	}
	return d, nil
}

// parse reads a document with local references only (no file or network
// access), its findings returned rather than logged.
func parse(doc []byte) (libopenapi.Document, error) {
	cfg := datamodel.NewDocumentConfiguration()
	cfg.Logger = slog.New(slog.DiscardHandler)
	return libopenapi.NewDocumentWithConfiguration(doc, cfg)
}

// Operations lists the documented operations, sorted.
func (d *Document) Operations() []Operation {
	var out []Operation
	topSecured := len(asSlice(d.Tree["security"])) > 0
	for path, item := range asMap(d.Tree["paths"]) {
		for _, m := range Methods {
			op, ok := asMap(item)[m].(map[string]any)
			if !ok {
				continue
			}
			secured := topSecured
			if sec, has := op["security"]; has {
				secured = len(asSlice(sec)) > 0
			}
			out = append(out, Operation{Method: strings.ToUpper(m), Path: path, Secured: secured, Object: op})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Path+" "+out[i].Method < out[j].Path+" "+out[j].Method
	})
	return out
}

// Resolve follows a local "$ref" (#/...) of node, if it has one.
func (d *Document) Resolve(node any) map[string]any {
	m := asMap(node)
	ref, ok := m["$ref"].(string)
	if !ok {
		return m
	}
	target, err := d.pointer(strings.TrimPrefix(ref, "#"))
	if err != nil {
		return nil
	}
	return d.Resolve(target)
}

func (d *Document) pointer(ptr string) (any, error) {
	var node any = d.Tree
	if ptr == "" {
		return node, nil
	}
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		switch n := node.(type) {
		case map[string]any:
			node = n[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n) {
				return nil, fmt.Errorf("%s: no item %q", ptr, tok)
			}
			node = n[i]
		default:
			node = nil
		}
		if node == nil {
			return nil, fmt.Errorf("%s: nothing at %q", ptr, tok)
		}
	}
	return node, nil
}

// checkSchemas compiles every Schema Object with JSON Schema 2020-12,
// which validates it against the meta-schema, and checks the examples of
// media types and of component schemas against their schemas.
func (d *Document) checkSchemas() error {
	compiler, err := newCompiler(d.Tree)
	if err != nil {
		return err
	}
	var errs []error
	reported := map[string]bool{} // a broken schema fails every schema that uses it: say so once
	for _, loc := range d.schemaLocations() {
		s, err := compiler.Compile(resourceURL + "#" + loc.pointer)
		if err != nil {
			if !reported[err.Error()] {
				reported[err.Error()] = true
				errs = append(errs, fmt.Errorf("schema at %s: %w", loc.pointer, err))
			}
			continue
		}
		for i, example := range loc.examples {
			if err := s.Validate(example); err != nil {
				errs = append(errs, fmt.Errorf("example %d of the schema at %s: %w", i, loc.pointer, err))
			}
		}
	}
	return errors.Join(errs...)
}

type schemaLocation struct {
	pointer  string
	examples []any
}

// schemaLocations finds every Schema Object that is not inside another:
// the component schemas and each "schema" of a parameter, header or media
// type, with the examples that go with it.
func (d *Document) schemaLocations() []schemaLocation {
	var out []schemaLocation
	for name, s := range asMap(asMap(d.Tree["components"])["schemas"]) {
		out = append(out, schemaLocation{pointer: "/components/schemas/" + escape(name), examples: asSlice(asMap(s)["examples"])})
	}
	var walk func(node any, ptr string)
	walk = func(node any, ptr string) {
		switch n := node.(type) {
		case map[string]any:
			for k, child := range n {
				p := ptr + "/" + escape(k)
				if k == "schema" {
					loc := schemaLocation{pointer: p}
					if ex, ok := n["example"]; ok {
						loc.examples = append(loc.examples, ex)
					}
					out = append(out, loc)
					continue
				}
				if ptr == "/components" && k == "schemas" {
					continue
				}
				walk(child, p)
			}
		case []any:
			for i, child := range n {
				walk(child, ptr+"/"+strconv.Itoa(i))
			}
		}
	}
	for _, top := range []string{"paths", "webhooks", "components"} {
		walk(d.Tree[top], "/"+top)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pointer < out[j].pointer })
	return out
}

var templateParam = regexp.MustCompile(`\{([^}]+)\}`)

// checkPathParameters: each {name} of a path template is a required path
// parameter of every operation of that path, and every path parameter
// names one (OpenAPI 3.1, Path Templating and Parameter Object).
func (d *Document) checkPathParameters() error {
	var errs []error
	for path, item := range asMap(d.Tree["paths"]) {
		var inTemplate []string
		for _, m := range templateParam.FindAllStringSubmatch(path, -1) {
			inTemplate = append(inTemplate, m[1])
		}
		sort.Strings(inTemplate)
		shared := d.pathParams(asMap(item)["parameters"])
		for _, m := range Methods {
			op, ok := asMap(item)[m].(map[string]any)
			if !ok {
				continue
			}
			declared := map[string]bool{}
			for name, required := range shared {
				declared[name] = required
			}
			for name, required := range d.pathParams(op["parameters"]) {
				declared[name] = required
			}
			var names []string
			for name, required := range declared {
				names = append(names, name)
				if !required {
					errs = append(errs, fmt.Errorf("%s %s: path parameter %q must be required", strings.ToUpper(m), path, name))
				}
			}
			sort.Strings(names)
			if !slices.Equal(names, inTemplate) {
				errs = append(errs, fmt.Errorf("%s %s: path parameters %v do not match the template's %v",
					strings.ToUpper(m), path, names, inTemplate))
			}
		}
	}
	return errors.Join(errs...)
}

func (d *Document) pathParams(list any) map[string]bool {
	out := map[string]bool{}
	for _, p := range asSlice(list) {
		param := d.Resolve(p)
		if param["in"] == "path" {
			name, _ := param["name"].(string)
			required, _ := param["required"].(bool)
			out[name] = required
		}
	}
	return out
}

// checkOperationIDs: operation ids are unique (client generators name
// methods after them).
func (d *Document) checkOperationIDs() error {
	seen := map[string]string{}
	var errs []error
	ops := d.Operations()
	for name, item := range asMap(d.Tree["webhooks"]) {
		for _, m := range Methods {
			if op, ok := asMap(item)[m].(map[string]any); ok {
				ops = append(ops, Operation{Method: strings.ToUpper(m), Path: "webhook " + name, Object: op})
			}
		}
	}
	for _, op := range ops {
		id, _ := op.Object["operationId"].(string)
		if id == "" {
			continue
		}
		where := op.Method + " " + op.Path
		if other, dup := seen[id]; dup {
			errs = append(errs, fmt.Errorf("operationId %q is used by %s and %s", id, other, where))
		}
		seen[id] = where
	}
	return errors.Join(errs...)
}

const resourceURL = "mem://openapi.json"

func newCompiler(tree map[string]any) (*jsonschema.Compiler, error) {
	raw, err := json.Marshal(tree)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(resourceURL, doc); err != nil {
		return nil, err
	}
	return c, nil
}

// Validator validates HTTP exchanges against a document.
type Validator struct {
	v validator.Validator
}

// webhookPathPrefix is where NewValidator's copy of the document routes
// its webhooks, so that a delivery is validated like a request.
const webhookPathPrefix = "/__webhooks/"

// NewValidator loads doc (see Load) for validating exchanges, in a copy
// with two changes:
//   - every object schema that lists its properties and does not say
//     whether others may appear is closed (additionalProperties: false), so
//     that a field the server sends and the document does not describe
//     fails. The published document leaves them open on purpose: a new
//     response field must not break clients generated from the old one;
//   - each webhook is also a path, /__webhooks/{name}, so that deliveries
//     are validated by the same request validator as calls to the API.
func NewValidator(doc []byte) (*Validator, error) {
	d, err := Load(doc)
	if err != nil {
		return nil, err
	}
	closeObjects(d.Tree)
	paths := asMap(d.Tree["paths"])
	for name, item := range asMap(d.Tree["webhooks"]) {
		paths[webhookPathPrefix+name] = item
	}
	raw, err := json.Marshal(d.Tree)
	if err != nil {
		return nil, err
	}
	lib, err := parse(raw)
	if err != nil {
		return nil, err
	}
	v, errs := validator.NewValidator(lib)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &Validator{v: v}, nil
}

// Request validates a request as sent: its operation, API key, path,
// query and header parameters, and body (given separately, as the
// request's own has been read).
func (v *Validator) Request(req *http.Request, body []byte) error {
	if ok, problems := v.v.ValidateHttpRequestSync(withBody(req, body)); !ok {
		return describe(problems)
	}
	return nil
}

// Response validates a response to req: a documented status, its
// headers, content type and body.
func (v *Validator) Response(req *http.Request, reqBody []byte, status int, header http.Header, body []byte) error {
	resp := &http.Response{StatusCode: status, Header: header, Body: io.NopCloser(bytes.NewReader(body))}
	if ok, problems := v.v.ValidateHttpResponse(withBody(req, reqBody), resp); !ok {
		return describe(problems)
	}
	return nil
}

// Webhook validates a delivery a receiver got, its headers and raw body,
// against the document's webhook name.
func (v *Validator) Webhook(name string, header http.Header, body []byte) error {
	u := &url.URL{Scheme: "https", Host: "receiver.example", Path: webhookPathPrefix + name}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, u.String(), nil)
	if err != nil {
		return err
	}
	req.Header = header.Clone()
	return v.Request(req, body)
}

func withBody(req *http.Request, body []byte) *http.Request {
	r := req.Clone(context.Background())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	return r
}

// describe turns the validator's findings into one error that says what
// is wrong and where.
func describe(problems []*liberrors.ValidationError) error {
	var lines []string
	for _, p := range problems {
		line := p.Message
		if p.Reason != "" {
			line += ": " + p.Reason
		}
		for _, s := range p.SchemaValidationErrors {
			where := cmp.Or(s.FieldPath, s.KeywordLocation)
			line += fmt.Sprintf("\n    at %s: %s", where, s.Reason)
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		return errors.New("invalid, with no reason given")
	}
	return errors.New(strings.Join(lines, "\n  "))
}

// closeObjects adds additionalProperties: false to every object schema
// with properties and no additionalProperties of its own. A schema is
// recognized by its "type" holding "object" next to "properties": no other
// object of an OpenAPI document has both.
func closeObjects(node any) {
	switch n := node.(type) {
	case map[string]any:
		_, hasProps := n["properties"].(map[string]any)
		_, hasAdditional := n["additionalProperties"]
		if hasProps && !hasAdditional && isObjectType(n["type"]) {
			n["additionalProperties"] = false
		}
		for _, child := range n {
			closeObjects(child)
		}
	case []any:
		for _, child := range n {
			closeObjects(child)
		}
	}
}

func isObjectType(t any) bool {
	switch t := t.(type) {
	case string:
		return t == "object"
	case []any:
		return slices.Contains(t, any("object"))
	}
	return false
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func escape(tok string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(tok)
}
