package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/egress"
	"github.com/akira-bot/akira/runner/sandbox"
)

// egressCollector exports the worker's egress proxy's counts: the runner keeps them without
// Prometheus, the metrics endpoint reads them when scraped.
type egressCollector struct{ p *egress.Proxy }

var egressRequestsDesc = prometheus.NewDesc("akira_egress_requests_total",
	"Connections and requests of sandboxed commands through the egress proxy, by destination host (a wildcard's pattern) and result.",
	[]string{"host", "result"}, nil)

func (egressCollector) Describe(ch chan<- *prometheus.Desc) { ch <- egressRequestsDesc }

func (c egressCollector) Collect(ch chan<- prometheus.Metric) {
	allowed, refused := c.p.Counts()
	for h, n := range allowed {
		ch <- prometheus.MustNewConstMetric(egressRequestsDesc, prometheus.CounterValue, float64(n), h, "allowed")
	}
	for h, n := range refused {
		ch <- prometheus.MustNewConstMetric(egressRequestsDesc, prometheus.CounterValue, float64(n), h, "refused")
	}
}

// serveNetworkWarnings are what akira serve says at start about networks that are not fenced;
// each run says it again (jobs).
func serveNetworkWarnings(op config.Operator, box sandbox.Config) []string {
	var out []string
	allow := box.VerifyNetwork == sandbox.NetAllow
	for _, p := range op.Agents {
		allow = allow || p.AgentNetwork() == sandbox.NetAllow
	}
	if allow {
		out = append(out, sandbox.AllowWarning)
	}
	return out
}
