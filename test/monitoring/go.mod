module github.com/deltakeeper/deltakeeper/test/monitoring

go 1.26.0

require (
	github.com/grafana/grafana-foundation-sdk/go v0.0.22
	sigs.k8s.io/yaml v1.6.0
)

require go.yaml.in/yaml/v2 v2.4.2 // indirect
