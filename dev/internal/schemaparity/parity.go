// Package schemaparity compares our CRDs with upstream's (LVMS and TopoLVM, vendored as test data
// under test/upstream-crds) field by field: what a manifest written for upstream may hold that ours
// refuses, and what upstream's schema enforces that ours does not. Each difference is a Finding;
// the deviations we keep on purpose are listed with their reasons in docs/api-compat.md.
package schemaparity

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// Finding is one difference: the CRD's kind and version, the field's path (".spec.a[].b", "" for
// the object), the check that differs, and what each side has.
type Finding struct {
	Kind, Version, Path, Check string
	Upstream, Ours             string
}

// Key identifies the finding in docs/api-compat.md's deviation table: kind, path and check.
func (f Finding) Key() string { return f.Kind + " " + pathOrRoot(f.Path) + " " + f.Check }

func (f Finding) String() string {
	return fmt.Sprintf("%s %s: %s %s: upstream %s, ours %s", f.Kind, f.Version, pathOrRoot(f.Path), f.Check,
		f.Upstream, f.Ours)
}

func pathOrRoot(p string) string {
	if p == "" {
		return "."
	}
	return p
}

// ReadCRD reads one CustomResourceDefinition from a YAML file.
func ReadCRD(path string) (*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		return nil, fmt.Errorf("decode %s: %w", path, err)
	}
	return crd, nil
}

// Compare lists every difference of ours from upstream: served versions upstream has that ours
// lacks, and per version the schema differences (compareSchema).
func Compare(upstream, ours *apiextensionsv1.CustomResourceDefinition) []Finding {
	kind := upstream.Spec.Names.Kind
	var out []Finding
	if ours.Spec.Names.Kind != kind || ours.Spec.Group != upstream.Spec.Group {
		return []Finding{{Kind: kind, Check: "kind", Upstream: upstream.Spec.Group + "/" + kind,
			Ours: ours.Spec.Group + "/" + ours.Spec.Names.Kind}}
	}
	if u, o := upstream.Spec.Scope, ours.Spec.Scope; u != o {
		out = append(out, Finding{Kind: kind, Check: "scope", Upstream: string(u), Ours: string(o)})
	}
	for _, uv := range upstream.Spec.Versions {
		if !uv.Served {
			continue
		}
		ov := version(ours, uv.Name)
		if ov == nil || !ov.Served {
			out = append(
				out,
				Finding{Kind: kind, Version: uv.Name, Check: "version served", Upstream: "yes", Ours: "no"},
			)
			continue
		}
		if (uv.Subresources != nil && uv.Subresources.Status != nil) &&
			(ov.Subresources == nil || ov.Subresources.Status == nil) {
			out = append(out, Finding{Kind: kind, Version: uv.Name, Check: "status subresource", Upstream: "yes",
				Ours: "no"})
		}
		c := comparer{kind: kind, version: uv.Name}
		c.schema("", uv.Schema.OpenAPIV3Schema, ov.Schema.OpenAPIV3Schema)
		out = append(out, c.out...)
	}
	return out
}

func version(
	crd *apiextensionsv1.CustomResourceDefinition,
	name string,
) *apiextensionsv1.CustomResourceDefinitionVersion {
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == name {
			return &crd.Spec.Versions[i]
		}
	}
	return nil
}

type comparer struct {
	kind, version string
	out           []Finding
}

func (c *comparer) add(path, check, upstream, ours string) {
	c.out = append(c.out, Finding{Kind: c.kind, Version: c.version, Path: path, Check: check,
		Upstream: upstream, Ours: ours})
}

// schema compares the schemas at path: a field upstream has that ours lacks (unless ours preserves
// unknown fields there), the type, enum, default, format, bounds, pattern, required fields and
// list and map types, and every CEL rule of upstream's that ours does not have word for word.
func (c *comparer) schema(path string, u, o *apiextensionsv1.JSONSchemaProps) {
	if u == nil {
		return
	}
	if o == nil {
		c.add(path, "schema", "present", "absent")
		return
	}
	c.scalars(path, u, o)
	c.required(path, u, o)
	c.rules(path, u, o)
	for _, name := range sortedKeys(u.Properties) {
		up := u.Properties[name]
		op, ok := o.Properties[name]
		switch {
		case ok:
			c.schema(path+"."+name, &up, &op)
		case o.XPreserveUnknownFields != nil && *o.XPreserveUnknownFields:
		default:
			c.add(path+"."+name, "field", "present", "absent")
		}
	}
	if u.Items != nil && u.Items.Schema != nil {
		var oi *apiextensionsv1.JSONSchemaProps
		if o.Items != nil {
			oi = o.Items.Schema
		}
		c.schema(path+"[]", u.Items.Schema, oi)
	}
	if u.AdditionalProperties != nil && u.AdditionalProperties.Schema != nil {
		var oa *apiextensionsv1.JSONSchemaProps
		if o.AdditionalProperties != nil {
			oa = o.AdditionalProperties.Schema
		}
		c.schema(path+"{}", u.AdditionalProperties.Schema, oa)
	}
}

// scalars compares the single-valued keywords of a schema.
func (c *comparer) scalars(path string, u, o *apiextensionsv1.JSONSchemaProps) {
	ut, ot := u.Type, o.Type
	if u.XIntOrString && o.XIntOrString {
		// An int-or-string value is accepted as an integer or a string whatever the type says (ours
		// says string, to type CEL's self; api-compat.md X6 proves integers pass).
		ut, ot = "", ""
	}
	pairs := []struct {
		check string
		u, o  any
	}{
		{"type", ut, ot},
		{"format", u.Format, o.Format},
		{"enum", enumOf(u.Enum), enumOf(o.Enum)},
		{"default", jsonOf(u.Default), jsonOf(o.Default)},
		{"pattern", u.Pattern, o.Pattern},
		{"minimum", u.Minimum, o.Minimum},
		{"maximum", u.Maximum, o.Maximum},
		{"minLength", u.MinLength, o.MinLength},
		{"maxLength", u.MaxLength, o.MaxLength},
		{"minItems", u.MinItems, o.MinItems},
		{"maxItems", u.MaxItems, o.MaxItems},
		{"minProperties", u.MinProperties, o.MinProperties},
		{"maxProperties", u.MaxProperties, o.MaxProperties},
		{"nullable", u.Nullable, o.Nullable},
		{"x-kubernetes-int-or-string", u.XIntOrString, o.XIntOrString},
		{"x-kubernetes-list-type", u.XListType, o.XListType},
		{"x-kubernetes-list-map-keys", u.XListMapKeys, o.XListMapKeys},
		{"x-kubernetes-map-type", u.XMapType, o.XMapType},
	}
	for _, p := range pairs {
		us, os := show(p.u), show(p.o)
		if us != os {
			c.add(path, p.check, us, os)
		}
	}
}

// required reports every field one side requires and the other does not.
func (c *comparer) required(path string, u, o *apiextensionsv1.JSONSchemaProps) {
	for _, r := range u.Required {
		if !slices.Contains(o.Required, r) {
			c.add(path+"."+r, "required", "yes", "no")
		}
	}
	for _, r := range o.Required {
		if !slices.Contains(u.Required, r) {
			c.add(path+"."+r, "required", "no", "yes")
		}
	}
}

// rules reports each upstream CEL rule that ours lacks word for word (whitespace aside).
func (c *comparer) rules(path string, u, o *apiextensionsv1.JSONSchemaProps) {
	have := map[string]bool{}
	for _, r := range o.XValidations {
		have[squash(r.Rule)] = true
	}
	for _, r := range u.XValidations {
		if !have[squash(r.Rule)] {
			c.add(path, "rule "+squash(r.Rule), "present", "absent")
		}
	}
}

// squash normalizes a rule: whitespace collapsed, and the operands of a rule that is one equality of
// two plain operands ("oldSelf == self") in order.
func squash(s string) string {
	f := strings.Fields(s)
	if len(f) == 3 && f[1] == "==" && f[0] > f[2] {
		f[0], f[2] = f[2], f[0]
	}
	return strings.Join(f, " ")
}

func enumOf(vs []apiextensionsv1.JSON) []string {
	var out []string
	for _, v := range vs {
		out = append(out, string(v.Raw))
	}
	slices.Sort(out)
	return out
}

func jsonOf(v *apiextensionsv1.JSON) string {
	if v == nil {
		return ""
	}
	var x any
	if err := json.Unmarshal(v.Raw, &x); err != nil {
		return string(v.Raw)
	}
	b, _ := json.Marshal(x) // keys sorted: the same default compares equal
	return string(b)
}

// show prints a keyword's value, "-" when unset.
func show(v any) string {
	rv := reflect.ValueOf(v)
	switch {
	case !rv.IsValid(), rv.Kind() == reflect.Pointer && rv.IsNil(), rv.Kind() == reflect.Slice && rv.Len() == 0:
		return "-"
	case rv.Kind() == reflect.Pointer:
		return fmt.Sprint(rv.Elem().Interface())
	case rv.Kind() == reflect.String && rv.Len() == 0:
		return "-"
	}
	return fmt.Sprint(v)
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
