// Command k8scheck decodes every object of a rendered Helm chart (helm template output) as the
// Kubernetes API type its apiVersion and kind name, strictly: an unknown or misspelt field is
// an error, as the API server would reject it. It then checks what the ralph-gate chart
// promises (probes, a locked-down security context, a checksum annotation, a config.yml) and
// writes the rendered config.yml to --config-out so CI can run `ralph-gate validate` on it.
//
// It is a separate module so the Kubernetes API types stay out of ralph-gate's own go.mod.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

func main() {
	configOut := flag.String("config-out", "", "write the ConfigMap's config.yml here")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: k8scheck [--config-out FILE] RENDERED.yaml")
		os.Exit(2)
	}
	data, err := os.ReadFile(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	c := &checker{}
	c.run(data)
	if c.config != "" && *configOut != "" {
		if err := os.WriteFile(*configOut, []byte(c.config), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	for _, p := range c.problems {
		fmt.Fprintln(os.Stderr, "k8scheck:", p)
	}
	if len(c.problems) > 0 {
		os.Exit(1)
	}
	fmt.Printf("k8scheck: %d objects decode as Kubernetes types (%s)\n", len(c.kinds), strings.Join(c.kinds, ", "))
}

type checker struct {
	problems []string
	kinds    []string
	config   string
}

func (c *checker) fail(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
}

func (c *checker) run(data []byte) {
	for _, doc := range splitDocuments(data) {
		var tm typeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			c.fail("a document is not YAML: %v", err)
			continue
		}
		if tm.Kind == "" {
			continue // an empty document (comments only)
		}
		id := tm.APIVersion + " " + tm.Kind + " " + tm.Metadata.Name
		if tm.Metadata.Name == "" {
			c.fail("%s: metadata.name is required", id)
		}
		c.kinds = append(c.kinds, tm.Kind)
		switch tm.APIVersion + "/" + tm.Kind {
		case "apps/v1/Deployment":
			var d appsv1.Deployment
			if c.decode(id, doc, &d) {
				c.deployment(id, &d)
			}
		case "v1/Service":
			var s corev1.Service
			if c.decode(id, doc, &s) && len(s.Spec.Ports) == 0 {
				c.fail("%s: no ports", id)
			}
		case "v1/ServiceAccount":
			var sa corev1.ServiceAccount
			if c.decode(id, doc, &sa) && (sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken) {
				c.fail("%s: automountServiceAccountToken must be false", id)
			}
		case "v1/ConfigMap":
			var cm corev1.ConfigMap
			if c.decode(id, doc, &cm) {
				cfg, ok := cm.Data["config.yml"]
				if !ok {
					c.fail("%s: no config.yml", id)
				}
				c.config = cfg
			}
		case "v1/Secret":
			var s corev1.Secret
			c.decode(id, doc, &s)
		case "v1/PersistentVolumeClaim":
			var pvc corev1.PersistentVolumeClaim
			if c.decode(id, doc, &pvc) && pvc.Spec.Resources.Requests.Storage().IsZero() {
				c.fail("%s: no storage request", id)
			}
		case "policy/v1/PodDisruptionBudget":
			var pdb policyv1.PodDisruptionBudget
			if c.decode(id, doc, &pdb) && pdb.Spec.MinAvailable == nil && pdb.Spec.MaxUnavailable == nil {
				c.fail("%s: neither minAvailable nor maxUnavailable", id)
			}
		case "networking.k8s.io/v1/Ingress":
			var ing networkingv1.Ingress
			c.decode(id, doc, &ing)
		case "monitoring.coreos.com/v1/ServiceMonitor":
			c.serviceMonitor(id, doc)
		default:
			c.fail("%s: unexpected kind (add it to k8scheck if the chart now renders it)", id)
		}
	}
	if len(c.kinds) == 0 {
		c.fail("nothing was rendered")
	}
}

// decode unmarshals strictly: unknown fields fail, as kubectl apply --validate=strict would.
func (c *checker) decode(id string, doc []byte, into any) bool {
	if err := yaml.UnmarshalStrict(doc, into); err != nil {
		c.fail("%s: does not decode: %v", id, err)
		return false
	}
	return true
}

func (c *checker) deployment(id string, d *appsv1.Deployment) {
	pod := d.Spec.Template.Spec
	if d.Spec.Selector == nil || len(d.Spec.Selector.MatchLabels) == 0 {
		c.fail("%s: spec.selector.matchLabels is required", id)
	}
	for k, v := range d.Spec.Selector.MatchLabels {
		if d.Spec.Template.Labels[k] != v {
			c.fail("%s: the selector %s=%s does not match the pod labels", id, k, v)
		}
	}
	if d.Spec.Template.Annotations["checksum/config"] == "" {
		c.fail("%s: no checksum/config annotation: a config change would not roll the pods", id)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		c.fail("%s: automountServiceAccountToken must be false", id)
	}
	if psc := pod.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		c.fail("%s: the pod must run as non-root", id)
	}
	if len(pod.Containers) == 0 {
		c.fail("%s: no containers", id)
	}
	for _, ct := range pod.Containers {
		cid := id + " container " + ct.Name
		if ct.LivenessProbe == nil || ct.LivenessProbe.HTTPGet == nil || ct.LivenessProbe.HTTPGet.Path != "/healthz" {
			c.fail("%s: the liveness probe must GET /healthz", cid)
		}
		if ct.ReadinessProbe == nil || ct.ReadinessProbe.HTTPGet == nil || ct.ReadinessProbe.HTTPGet.Path != "/readyz" {
			c.fail("%s: the readiness probe must GET /readyz", cid)
		}
		sc := ct.SecurityContext
		switch {
		case sc == nil:
			c.fail("%s: no securityContext", cid)
		case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
			c.fail("%s: the root filesystem must be read-only", cid)
		case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
			c.fail("%s: allowPrivilegeEscalation must be false", cid)
		case sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL":
			c.fail("%s: capabilities must drop ALL", cid)
		}
		if ct.Resources.Requests.Memory().IsZero() {
			c.fail("%s: no memory request", cid)
		}
		env := map[string]bool{}
		for _, e := range ct.Env {
			env[e.Name] = true
			if e.Value != "" && (strings.Contains(e.Name, "SECRET") || strings.Contains(e.Name, "KEY") || strings.Contains(e.Name, "DSN") || strings.Contains(e.Name, "TOKEN")) {
				c.fail("%s: %s is set in clear; it must come from a Secret", cid, e.Name)
			}
		}
		for _, want := range []string{"GITHUB_APP_INTEGRATION_ID", "GITHUB_APP_WEBHOOK_SECRET", "GITHUB_APP_PRIVATE_KEY"} {
			if !env[want] {
				c.fail("%s: %s is not set", cid, want)
			}
		}
	}
}

// serviceMonitor checks the Prometheus Operator's CRD by hand (its Go types are not in
// k8s.io/api): the fields the operator requires, and nothing misspelt at the top.
func (c *checker) serviceMonitor(id string, doc []byte) {
	var sm struct {
		APIVersion string         `json:"apiVersion"`
		Kind       string         `json:"kind"`
		Metadata   map[string]any `json:"metadata"`
		Spec       struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			Endpoints []struct {
				Port          string `json:"port"`
				Path          string `json:"path"`
				Interval      string `json:"interval"`
				ScrapeTimeout string `json:"scrapeTimeout"`
			} `json:"endpoints"`
			NamespaceSelector map[string]any `json:"namespaceSelector"`
		} `json:"spec"`
	}
	if !c.decode(id, doc, &sm) {
		return
	}
	if len(sm.Spec.Selector.MatchLabels) == 0 {
		c.fail("%s: spec.selector.matchLabels is required", id)
	}
	if len(sm.Spec.Endpoints) == 0 {
		c.fail("%s: spec.endpoints is required", id)
	}
	for _, e := range sm.Spec.Endpoints {
		if e.Port == "" || e.Path != "/metrics" {
			c.fail("%s: each endpoint needs a port name and path /metrics", id)
		}
	}
}

// splitDocuments splits a YAML stream on "---" lines.
func splitDocuments(data []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		if t := bytes.TrimRight(line, "\r\n"); bytes.Equal(t, []byte("---")) || bytes.HasPrefix(t, []byte("--- ")) {
			docs = append(docs, append([]byte(nil), cur.Bytes()...))
			cur.Reset()
			continue
		}
		cur.Write(line)
	}
	return append(docs, cur.Bytes())
}
