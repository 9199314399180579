package httpapi

import (
	_ "embed"
	"encoding/json"
	"net/http"

	"sigs.k8s.io/yaml"
)

// openAPIYAML is the OpenAPI 3.1 description of this API, written as YAML
// for its readers and reviewers; clients get it as JSON.
//
//go:embed openapi/openapi.yaml
var openAPIYAML []byte

// openAPIJSON is converted once, at start: the document is part of the
// binary, so a conversion error is a build defect, which the tests catch.
var openAPIJSON = func() json.RawMessage {
	j, err := yaml.YAMLToJSON(openAPIYAML)
	if err != nil {
		panic("httpapi: openapi/openapi.yaml is not valid YAML: " + err.Error())
	}
	return j
}()

// serveOpenAPI answers GET /v1/openapi.json. It needs no API key: the
// document holds nothing an organization owns, and client generators and
// API explorers fetch it without one.
func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, openAPIJSON)
}
