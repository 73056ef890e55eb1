package metrics

import (
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/salvor-dev/salvor/deploy/monitoring"
)

// registered returns the names of Salvor's metric families, and which are
// histograms.
func registered() (names map[string]bool, histograms map[string]bool) {
	names, histograms = map[string]bool{}, map[string]bool{}
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	for _, c := range All {
		ch := make(chan *prometheus.Desc, 4)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			if m := fq.FindStringSubmatch(d.String()); m != nil {
				names[m[1]] = true
				switch c.(type) {
				case *prometheus.HistogramVec, prometheus.Histogram:
					histograms[m[1]] = true
				}
			}
		}
	}
	return names, histograms
}

// TestMonitoringUsesOnlyServedMetrics checks the dashboard and the alerts
// in deploy/monitoring against the metrics the server registers: a renamed
// metric would leave a panel empty and an alert silent.
func TestMonitoringUsesOnlyServedMetrics(t *testing.T) {
	names, histograms := registered()
	if len(names) != len(All) {
		t.Fatalf("%d names for %d collectors", len(names), len(All))
	}
	used, err := monitoring.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	if len(used) < 15 {
		t.Fatalf("the monitoring files use only %d metrics: %v", len(used), used)
	}
	for _, m := range used {
		family := m
		for _, suffix := range []string{"_bucket", "_count", "_sum"} {
			if base, ok := strings.CutSuffix(m, suffix); ok && histograms[base] {
				family = base
			}
		}
		if !names[family] {
			t.Errorf("deploy/monitoring uses %s, which the server does not serve", m)
		}
	}
	queries, _ := monitoring.Queries()
	for _, want := range []string{"salvor_schedule_last_successful_backup_timestamp_seconds", "salvor_location_available == 0",
		"salvor_plugin_restarts_total", "salvor_operation_oldest_start_timestamp_seconds"} {
		if !strings.Contains(strings.Join(queries, "\n"), want) {
			t.Errorf("no query uses %s", want)
		}
	}
}
