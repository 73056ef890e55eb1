package modifiers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/gobwas/glob"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/salvor-dev/salvor/internal/configmapref"
	"github.com/salvor-dev/salvor/internal/resources"
)

// document is the ConfigMap's value, field for field as Velero reads it.
type document struct {
	Version string     `json:"version"`
	Rules   []ruleSpec `json:"resourceModifierRules"`
}

type ruleSpec struct {
	Conditions       conditions  `json:"conditions"`
	Patches          []operation `json:"patches,omitempty"`
	MergePatches     []patchData `json:"mergePatches,omitempty"`
	StrategicPatches []patchData `json:"strategicPatches,omitempty"`
}

type conditions struct {
	Namespaces        []string              `json:"namespaces,omitempty"`
	GroupResource     string                `json:"groupResource"`
	ResourceNameRegex string                `json:"resourceNameRegex,omitempty"`
	LabelSelector     *metav1.LabelSelector `json:"labelSelector,omitempty"`
	Matches           []match               `json:"matches,omitempty"`
}

type match struct {
	Path  string `json:"path,omitempty"`
	Value any    `json:"value,omitempty"`
}

type operation struct {
	Operation string `json:"operation"`
	From      string `json:"from,omitempty"`
	Path      string `json:"path"`
	// Value is any YAML value. Velero's is a string read as JSON where it
	// looks like JSON (a number, true, null, an object); a YAML number or
	// mapping, which Velero refuses, means itself here.
	Value any `json:"value,omitempty"`
}

type patchData struct {
	PatchData string `json:"patchData,omitempty"`
}

// Rules are a restore's resource modifiers, parsed and checked.
type Rules struct {
	source string
	rules  []rule
}

type rule struct {
	n          int // its index in resourceModifierRules
	namespaces []string
	group      glob.Glob
	name       *regexp.Regexp
	labels     labels.Selector
	matches    jsonpatch.Patch
	json       jsonpatch.Patch
	merge      [][]byte
	strategic  [][]byte
}

// Parse reads the rules in text, a ConfigMap's one value; source names
// the ConfigMap in messages. The problems say what to fix; with any, the
// rules are nil.
func Parse(source, text string) (*Rules, []string) {
	var doc document
	if err := yaml.UnmarshalStrict([]byte(text), &doc); err != nil {
		return nil, []string{fmt.Sprintf("%s: reading its resource modifier rules: %v", source, err)}
	}
	var problems []string
	if !strings.EqualFold(doc.Version, "v1") {
		problems = append(problems, fmt.Sprintf("%s: version %q: resource modifiers have version v1", source, doc.Version))
	}
	if len(doc.Rules) == 0 {
		problems = append(problems, fmt.Sprintf("%s: resourceModifierRules is empty: give at least one rule", source))
	}
	out := &Rules{source: source}
	for i, spec := range doc.Rules {
		r, ps := compile(i, spec)
		for _, p := range ps {
			problems = append(problems, fmt.Sprintf("%s: resourceModifierRules[%d]: %s", source, i, p))
		}
		out.rules = append(out.rules, r)
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return out, nil
}

func compile(n int, spec ruleSpec) (rule, []string) {
	r := rule{n: n, namespaces: spec.Conditions.Namespaces}
	var problems []string
	c := spec.Conditions
	if c.GroupResource == "" {
		problems = append(problems, `conditions.groupResource is required (a resource and its group, "deployments.apps"; a glob such as "*.apps")`)
	} else if g, err := glob.Compile(c.GroupResource, '.'); err != nil {
		problems = append(problems, fmt.Sprintf("conditions.groupResource %q is not a glob: %v", c.GroupResource, err))
	} else {
		r.group = g
	}
	for _, ns := range c.Namespaces {
		if p := resources.NamespacePatternProblem("conditions.namespaces", ns); p != "" {
			problems = append(problems, p)
		}
	}
	if c.ResourceNameRegex != "" {
		re, err := regexp.Compile(c.ResourceNameRegex)
		if err != nil {
			problems = append(problems, fmt.Sprintf("conditions.resourceNameRegex %q: %v", c.ResourceNameRegex, err))
		}
		r.name = re
	}
	if c.LabelSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
		if err != nil {
			problems = append(problems, fmt.Sprintf("conditions.labelSelector: %v", err))
		}
		r.labels = sel
	}
	var tests []operation
	for i, m := range c.Matches {
		if m.Path == "" {
			problems = append(problems, fmt.Sprintf("conditions.matches[%d]: path is required (a JSON pointer, /spec/storageClassName)", i))
		}
		tests = append(tests, operation{Operation: "test", Path: m.Path, Value: m.Value})
	}
	if len(tests) > 0 {
		p, err := decode(tests)
		if err != nil {
			problems = append(problems, fmt.Sprintf("conditions.matches: %v", err))
		}
		r.matches = p
	}
	kinds := 0
	for _, k := range []int{len(spec.Patches), len(spec.MergePatches), len(spec.StrategicPatches)} {
		if k > 0 {
			kinds++
		}
	}
	if kinds != 1 {
		problems = append(problems, fmt.Sprintf("give one of patches, mergePatches and strategicPatches (it gives %d)", kinds))
	}
	for i, op := range spec.Patches {
		if p := op.problem(); p != "" {
			problems = append(problems, fmt.Sprintf("patches[%d]: %s", i, p))
		}
	}
	if len(spec.Patches) > 0 && len(problems) == 0 {
		p, err := decode(spec.Patches)
		if err != nil {
			problems = append(problems, fmt.Sprintf("patches: %v", err))
		}
		r.json = p
	}
	var ps []string
	r.merge, ps = documents("mergePatches", spec.MergePatches)
	problems = append(problems, ps...)
	r.strategic, ps = documents("strategicPatches", spec.StrategicPatches)
	return r, append(problems, ps...)
}

// documents reads patch documents, YAML or JSON, each a mapping.
func documents(field string, patches []patchData) ([][]byte, []string) {
	var out [][]byte
	var problems []string
	for i, p := range patches {
		b, err := yaml.YAMLToJSON([]byte(p.PatchData))
		var m map[string]any
		if err == nil {
			err = json.Unmarshal(b, &m)
		}
		if err != nil || m == nil {
			problems = append(problems, fmt.Sprintf("%s[%d].patchData is not a YAML or JSON mapping: %v", field, i, err))
			continue
		}
		out = append(out, b)
	}
	return out, problems
}

var operations = []string{"add", "remove", "replace", "move", "copy", "test"}

func (op operation) problem() string {
	kind := strings.ToLower(op.Operation)
	switch {
	case !slices.Contains(operations, kind):
		return fmt.Sprintf("operation %q: use one of %s", op.Operation, strings.Join(operations, ", "))
	case op.Path == "":
		return "path is required (a JSON pointer, /spec/storageClassName)"
	case (kind == "move" || kind == "copy") && op.From == "":
		return fmt.Sprintf("%s needs from: the JSON pointer to %s from", kind, kind)
	}
	return ""
}

// decode makes an RFC 6902 patch of operations.
func decode(ops []operation) (jsonpatch.Patch, error) {
	var out []map[string]any
	for _, op := range ops {
		m := map[string]any{"op": strings.ToLower(op.Operation), "path": op.Path}
		if op.From != "" {
			m["from"] = op.From
		}
		v, err := value(op.Value)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", op.Operation, op.Path, err)
		}
		m["value"] = v
		out = append(out, m)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return jsonpatch.DecodePatch(b)
}

// value is what a patch's value means. A string is read as Velero reads
// it: "" and a string in double quotes are strings (the quotes dropped),
// null, true and false (any case) and numbers are themselves, text that
// starts with { or [ is JSON, anything else a string.
func value(v any) (any, error) {
	s, ok := v.(string)
	if !ok {
		return v, nil
	}
	switch lower := strings.ToLower(s); {
	case s == "":
		return "", nil
	case len(s) >= 2 && strings.HasPrefix(s, `"`) && strings.HasSuffix(s, `"`):
		return s[1 : len(s)-1], nil
	case s == "null":
		return nil, nil
	case lower == "true" || lower == "false":
		return lower == "true", nil
	case strings.HasPrefix(s, "{") || strings.HasPrefix(s, "["):
		var out any
		if err := json.Unmarshal([]byte(s), &out); err != nil {
			return nil, fmt.Errorf("value %s starts as JSON but is not: %v (put it in double quotes to mean the string)", s, err)
		}
		return out, nil
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return json.Number(s), nil
	}
	return s, nil
}

// Apply changes obj, an item of resource gr that the backup files under
// namespace ns ("" for a cluster-scoped one), as the rules that select it
// say, in their order. Every rule's conditions are judged on the item as
// it came to the rules. It returns the indexes of the rules that changed
// it; an error names the rule and leaves obj as it was.
func (rs *Rules) Apply(gr schema.GroupResource, ns string, obj *unstructured.Unstructured) ([]int, error) {
	if rs == nil {
		return nil, nil
	}
	// The item's JSON is made only for a rule that selects it by name,
	// labels and resource: most items of a restore meet no rule.
	var origin, doc []byte
	var applied []int
	for _, r := range rs.rules {
		if !r.selectsByMeta(gr, ns, obj) {
			continue
		}
		if origin == nil {
			var err error
			if origin, err = json.Marshal(obj.Object); err != nil {
				return nil, err
			}
			doc = origin
		}
		if ok, err := r.matchesFields(origin); err != nil {
			return nil, rs.ruleError(r, err)
		} else if !ok {
			continue
		}
		changed, err := r.patch(doc, obj.GroupVersionKind())
		if err != nil {
			return nil, rs.ruleError(r, err)
		}
		if changed != nil {
			doc = changed
			applied = append(applied, r.n)
		}
	}
	if len(applied) == 0 {
		return nil, nil
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(doc); err != nil {
		return nil, fmt.Errorf("%s: the item as %s it is unreadable: %w", rs.source, numbered(applied, "leaves", "leave"), err)
	}
	if moved := identity(obj, out); moved != "" {
		return nil, fmt.Errorf("%s: %s the item's %s: a rule may change what an item holds, not which item it is (use the restore's namespaceMapping to move items)", rs.source, numbered(applied, "changes", "change"), moved)
	}
	obj.Object = out.Object
	return applied, nil
}

// numbered names rules by index with the verb that agrees:
// "resourceModifierRules[2] changes", "resourceModifierRules[0], [2] change".
func numbered(ns []int, one, many string) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprintf("[%d]", n)
	}
	verb := many
	if len(ns) == 1 {
		verb = one
	}
	return fmt.Sprintf("resourceModifierRules%s %s", strings.Join(s, ", "), verb)
}

func (rs *Rules) ruleError(r rule, err error) error {
	return fmt.Errorf("%s: resourceModifierRules[%d]: %w", rs.source, r.n, err)
}

// identity names what of an item's identity differs between a and b.
func identity(a, b *unstructured.Unstructured) string {
	switch {
	case a.GetAPIVersion() != b.GetAPIVersion():
		return "apiVersion"
	case a.GetKind() != b.GetKind():
		return "kind"
	case a.GetNamespace() != b.GetNamespace():
		return "namespace"
	case a.GetName() != b.GetName() || a.GetGenerateName() != b.GetGenerateName():
		return "name"
	}
	return ""
}

// selectsByMeta judges the conditions that need no JSON of the item.
func (r rule) selectsByMeta(gr schema.GroupResource, ns string, obj *unstructured.Unstructured) bool {
	if ns != "" && !resources.Includes(r.namespaces, nil, resources.NameMatcher(ns)) {
		return false
	}
	return r.group.Match(gr.String()) &&
		(r.name == nil || r.name.MatchString(obj.GetName())) &&
		(r.labels == nil || r.labels.Matches(labels.Set(obj.GetLabels())))
}

// matchesFields judges conditions.matches on the item's JSON.
func (r rule) matchesFields(doc []byte) (bool, error) {
	if r.matches == nil {
		return true, nil
	}
	_, err := r.matches.Apply(doc)
	if errors.Is(err, jsonpatch.ErrTestFailed) || errors.Is(err, jsonpatch.ErrMissing) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("conditions.matches: %w", err)
	}
	return true, nil
}

// patch returns doc as the rule changes it, or nil when a JSON patch's
// test operation says to leave it (Velero's conditional patch).
func (r rule) patch(doc []byte, gvk schema.GroupVersionKind) ([]byte, error) {
	switch {
	case r.json != nil:
		out, err := r.json.Apply(doc)
		if errors.Is(err, jsonpatch.ErrTestFailed) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("patches: %w", err)
		}
		return out, nil
	case r.merge != nil:
		for i, p := range r.merge {
			var err error
			if doc, err = jsonpatch.MergePatch(doc, p); err != nil {
				return nil, fmt.Errorf("mergePatches[%d]: %w", i, err)
			}
		}
		return doc, nil
	}
	typed, err := scheme.Scheme.New(gvk)
	if err != nil {
		return nil, fmt.Errorf("strategicPatches: a strategic merge patch needs a kind Kubernetes builds in, and %s is not one: use mergePatches or patches", gvk.Kind)
	}
	for i, p := range r.strategic {
		if doc, err = strategicpatch.StrategicMergePatch(doc, p, typed); err != nil {
			return nil, fmt.Errorf("strategicPatches[%d]: %w", i, err)
		}
	}
	return doc, nil
}

// field is spec.resourceModifier, for configmapref's messages.
var field = configmapref.Field{Path: "spec.resourceModifier", Holds: "resource modifier rules", Source: "resource modifier configmap", Owner: "restore", File: "rules.yaml"}

// Load reads the rules a restore's spec.resourceModifier names (nil: no
// rules). The problems say what is wrong with the reference or the rules;
// the error, that the ConfigMap could not be read.
func Load(ctx context.Context, get configmapref.Getter, namespace string, ref *corev1.TypedLocalObjectReference) (*Rules, []string, error) {
	return configmapref.Load(ctx, get, namespace, field, ref, Parse)
}
