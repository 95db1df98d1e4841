//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

// managerNamespace and managerName are where test/e2e/config installs the manager.
const (
	managerNamespace = "deltakeeper-system"
	managerName      = "deltakeeper-manager"
	// leaseName is the manager's LeaderElectionID.
	leaseName = "deltakeeper.deltakeeper.io"
)

// config is what hack/e2e.sh prepared for the tests, read from the environment.
type config struct {
	kubeconfig string
	kubectl    string // kubectl matching the cluster's version
	image      string // the deltakeeper image, imported into the cluster
	probeImage string // test/e2e/probe packed as an image, imported into the cluster
	version    string // what `deltakeeper version` of that image prints
	binary     string // bin/deltakeeper on the host, for preparing tables
	s3         s3Config
}

// s3Config describes the S3 test server on the host, bound to the pod bridge so pods reach it.
type s3Config struct {
	endpoint        string // http://<bridge ip>:<port>, the same from the host and from pods
	bucket          string
	region          string
	accessKeyID     string
	secretAccessKey string
}

var (
	cfg       config
	k8sClient client.Client
	clientset *kubernetes.Clientset
	scheme    = runtime.NewScheme()
)

func TestMain(m *testing.M) {
	if err := setup(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e setup failed: %v\n", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func setup() error {
	var missing []string
	get := func(name string) string {
		v := os.Getenv(name)
		if v == "" {
			missing = append(missing, name)
		}
		return v
	}
	cfg = config{
		kubeconfig: get("KUBECONFIG"),
		kubectl:    get("DELTAKEEPER_E2E_KUBECTL"),
		image:      get("DELTAKEEPER_E2E_IMAGE"),
		probeImage: get("DELTAKEEPER_E2E_PROBE_IMAGE"),
		version:    get("DELTAKEEPER_E2E_VERSION"),
		binary:     get("DELTAKEEPER_E2E_BINARY"),
		s3: s3Config{
			endpoint:        get("DELTAKEEPER_E2E_S3_ENDPOINT"),
			bucket:          get("DELTAKEEPER_E2E_S3_BUCKET"),
			region:          get("AWS_REGION"),
			accessKeyID:     get("AWS_ACCESS_KEY_ID"),
			secretAccessKey: get("AWS_SECRET_ACCESS_KEY"),
		},
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s not set: run the e2e tests with hack/e2e.sh (make e2e), which starts the cluster "+
			"and the S3 server and sets them", strings.Join(missing, ", "))
	}
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := deltav1.AddToScheme(scheme); err != nil {
		return err
	}
	restConfig, err := clientcmd.BuildConfigFromFlags("", cfg.kubeconfig)
	if err != nil {
		return fmt.Errorf("loading %s: %w", cfg.kubeconfig, err)
	}
	if k8sClient, err = client.New(restConfig, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	if clientset, err = kubernetes.NewForConfig(restConfig); err != nil {
		return err
	}
	return nil
}
