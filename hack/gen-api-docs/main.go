// Command gen-api-docs writes docs/api.md from the generated CRDs, so the API reference always says what the
// API server enforces: every field with its type, default, bounds and description, plus the CEL rules.
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// opaque fields are Kubernetes core types documented upstream; listing their hundreds of sub-fields would
// bury ours.
var opaque = map[string]string{
	"affinity":         "core/v1 Affinity",
	"tolerations":      "list of core/v1 Toleration",
	"resources":        "core/v1 ResourceRequirements",
	"imagePullSecrets": "list of core/v1 LocalObjectReference",
	"selector":         "meta/v1 LabelSelector",
	"caBundle":         "core/v1 ConfigMapKeySelector",
	"conditions":       "list of meta/v1 Condition",
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: gen-api-docs CRD_DIR OUT.md")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "gen-api-docs:", err)
		os.Exit(1)
	}
}

func run(crdDir, out string) error {
	files, err := filepath.Glob(filepath.Join(crdDir, "*.yaml"))
	if err != nil {
		return err
	}
	sort.Strings(files)
	var b bytes.Buffer
	b.WriteString("# API reference: deltakeeper.io/v1\n\n")
	b.WriteString("Generated from the CRDs by `make generate` (hack/gen-api-docs); do not edit. Every bound, default and\n")
	b.WriteString("rule below is enforced by the API server at admission.\n\n")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &crd); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		writeCRD(&b, &crd)
	}
	return os.WriteFile(out, b.Bytes(), 0o644)
}

func writeCRD(b *bytes.Buffer, crd *apiextensionsv1.CustomResourceDefinition) {
	v := crd.Spec.Versions[0]
	fmt.Fprintf(b, "## %s\n\n", crd.Spec.Names.Kind)
	fmt.Fprintf(b, "`kubectl get %s` (short names: %s; category: %s)\n\n", crd.Spec.Names.Plural,
		strings.Join(crd.Spec.Names.ShortNames, ", "), strings.Join(crd.Spec.Names.Categories, ", "))
	schema := v.Schema.OpenAPIV3Schema
	for _, part := range []string{"spec", "status"} {
		prop, ok := schema.Properties[part]
		if !ok {
			continue
		}
		fmt.Fprintf(b, "### %s.%s\n\n", crd.Spec.Names.Kind, part)
		if prop.Description != "" {
			fmt.Fprintf(b, "%s\n\n", oneLine(prop.Description))
		}
		writeRules(b, part, prop.XValidations)
		b.WriteString("| field | type | default | validation | description |\n|---|---|---|---|---|\n")
		writeFields(b, part, &prop)
		b.WriteString("\n")
	}
}

func writeFields(b *bytes.Buffer, path string, s *apiextensionsv1.JSONSchemaProps) {
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	for _, n := range names {
		p := s.Properties[n]
		full := path + "." + n
		typ := typeOf(&p)
		if o, ok := opaque[n]; ok {
			typ = o
		}
		if required[n] {
			typ += " (required)"
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s |\n", full, typ, defaultOf(&p), constraints(&p), oneLine(p.Description))
		if _, ok := opaque[n]; ok {
			continue
		}
		switch {
		case len(p.Properties) > 0:
			writeFields(b, full, &p)
		case p.Items != nil && p.Items.Schema != nil && len(p.Items.Schema.Properties) > 0:
			writeFields(b, full+"[]", p.Items.Schema)
		}
	}
}

func writeRules(b *bytes.Buffer, path string, rules apiextensionsv1.ValidationRules) {
	for _, r := range rules {
		fmt.Fprintf(b, "- Rule on `%s`: %s\n", path, ruleMessage(r))
	}
	if len(rules) > 0 {
		b.WriteString("\n")
	}
}

func typeOf(p *apiextensionsv1.JSONSchemaProps) string {
	switch {
	case p.XIntOrString:
		return "quantity (int or string)"
	case p.Type == "array" && p.Items != nil && p.Items.Schema != nil:
		return "list of " + typeOf(p.Items.Schema)
	case p.Type == "object" && p.AdditionalProperties != nil && p.AdditionalProperties.Schema != nil:
		return "map of " + typeOf(p.AdditionalProperties.Schema)
	case p.Format != "":
		return p.Type + " (" + p.Format + ")"
	}
	return p.Type
}

func defaultOf(p *apiextensionsv1.JSONSchemaProps) string {
	if p.Default == nil {
		return ""
	}
	return "`" + string(p.Default.Raw) + "`"
}

func constraints(p *apiextensionsv1.JSONSchemaProps) string {
	var c []string
	if len(p.Enum) > 0 {
		var vals []string
		for _, e := range p.Enum {
			vals = append(vals, strings.Trim(string(e.Raw), `"`))
		}
		c = append(c, "one of "+strings.Join(vals, ", "))
	}
	if p.Minimum != nil {
		c = append(c, fmt.Sprintf("≥ %v", *p.Minimum))
	}
	if p.Maximum != nil {
		c = append(c, fmt.Sprintf("≤ %v", *p.Maximum))
	}
	if p.MaxLength != nil {
		c = append(c, fmt.Sprintf("≤ %d chars", *p.MaxLength))
	}
	if p.MaxItems != nil {
		c = append(c, fmt.Sprintf("≤ %d items", *p.MaxItems))
	}
	if p.Pattern != "" {
		c = append(c, "pattern `"+strings.ReplaceAll(p.Pattern, "|", `\|`)+"`")
	}
	for _, r := range p.XValidations {
		c = append(c, ruleMessage(r))
	}
	return oneLine(strings.Join(c, "; "))
}

// ruleMessage is a rule's message; for a messageExpression, its top-level string literals with … where the
// expression puts a value ('x "' + self + '" is not…' reads x "…" is not…).
func ruleMessage(r apiextensionsv1.ValidationRule) string {
	if r.Message != "" || r.MessageExpression == "" {
		return r.Message
	}
	var out strings.Builder
	inLiteral, gap, depth := false, false, 0
	expr := r.MessageExpression
	for i := 0; i < len(expr); i++ {
		ch := expr[i]
		keep := depth == 0 // literals inside calls (split(' ')) are arguments, not message text
		switch {
		case inLiteral && ch == '\\' && i+1 < len(expr):
			i++
			if keep {
				out.WriteByte(expr[i])
			}
		case inLiteral && ch == '\'':
			inLiteral = false
		case inLiteral:
			if keep {
				out.WriteByte(ch)
			}
		case ch == '\'' && keep:
			if gap && out.Len() > 0 {
				out.WriteString("…")
			}
			inLiteral, gap = true, false
		case ch == '\'':
			inLiteral = true
		case ch == '(' || ch == '[':
			depth++
			gap = true
		case ch == ')' || ch == ']':
			depth--
		case ch != ' ' && ch != '+':
			gap = true
		}
	}
	if gap {
		out.WriteString("…")
	}
	return out.String()
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	return strings.ReplaceAll(s, "|", `\|`)
}
