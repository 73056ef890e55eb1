// Package monitoring holds Salvor's Grafana dashboard and Prometheus
// alerts, embedded so that tests can check them against the metrics the
// server serves.
package monitoring

import (
	"embed"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"

	"sigs.k8s.io/yaml"
)

//go:embed grafana-dashboard.json prometheusrule.yaml
var Files embed.FS

// Queries returns every PromQL expression of the dashboard and the rules.
func Queries() ([]string, error) {
	var out []string
	b, err := Files.ReadFile("grafana-dashboard.json")
	if err != nil {
		return nil, err
	}
	var dash struct {
		Panels []struct {
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		return nil, fmt.Errorf("grafana-dashboard.json: %w", err)
	}
	for _, p := range dash.Panels {
		for _, t := range p.Targets {
			out = append(out, t.Expr)
		}
	}
	if b, err = Files.ReadFile("prometheusrule.yaml"); err != nil {
		return nil, err
	}
	var rule struct {
		Spec struct {
			Groups []struct {
				Rules []struct {
					Alert string `json:"alert"`
					Expr  string `json:"expr"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &rule); err != nil {
		return nil, fmt.Errorf("prometheusrule.yaml: %w", err)
	}
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			out = append(out, r.Expr)
		}
	}
	return out, nil
}

var metricName = regexp.MustCompile(`\bsalvor_[a-z_]+`)

// Metrics returns the Salvor metric names the queries use (a histogram's
// as its _bucket, _count or _sum series).
func Metrics() ([]string, error) {
	qs, err := Queries()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, q := range qs {
		for _, m := range metricName.FindAllString(q, -1) {
			seen[m] = true
		}
	}
	out := make([]string, 0, len(seen))
	for m := range seen {
		out = append(out, m)
	}
	sort.Strings(out)
	return out, nil
}
