// Package monitoring checks the shipped alerts and Grafana dashboard (config/monitoring) without a cluster:
// the dashboard loads in Grafana's schema (grafana-foundation-sdk's dashboard types, strictly), every query and
// alert reads only metrics the manager defines, every alert has a runbook section, and promtool accepts the rules
// (check rules, the rules' unit tests, check config). It is its own module so that the Grafana SDK stays out of
// the main go.mod; test/e2e checks the same queries against a live Prometheus.
package monitoring
