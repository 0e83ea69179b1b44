// Command k8scheck decodes every object of a rendered Helm chart (helm template output) as the
// Kubernetes API type its apiVersion and kind name, strictly: an unknown or misspelt field is
// an error, as the API server would reject it. It then checks what the ralph-gate chart
// promises (probes, a locked-down security context, a checksum/secret annotation exactly when
// it renders a Secret, the App's private key as a read-only file from a Secret, Ingress paths
// that reach the Service, a config.yml) and writes the rendered config.yml to --config-out so
// CI can run `ralph-gate validate` on it.
//
// It is a separate module so the Kubernetes API types stay out of ralph-gate's own go.mod.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path"
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
	// secrets counts the Secrets the chart rendered; services maps each Service's name to its
	// port names; deployments and ingresses are checked against them once every document is read.
	secrets     int
	deployments []*appsv1.Deployment
	services    map[string][]string
	ingresses   []*networkingv1.Ingress
}

// publicPaths are the only routes an Ingress may expose, with the path type each must have:
// the webhook and the MCP façade exactly, the board health pages (behind their sign-in) as a
// prefix.
var publicPaths = map[string]networkingv1.PathType{"/api/github/hook": networkingv1.PathTypeExact,
	"/mcp": networkingv1.PathTypeExact, "/ui/": networkingv1.PathTypePrefix}

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
	c.services = map[string][]string{}
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
				c.deployments = append(c.deployments, &d)
			}
		case "v1/Service":
			var s corev1.Service
			if c.decode(id, doc, &s) {
				if len(s.Spec.Ports) == 0 {
					c.fail("%s: no ports", id)
				}
				for _, p := range s.Spec.Ports {
					c.services[s.Name] = append(c.services[s.Name], p.Name)
				}
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
			if c.decode(id, doc, &s) {
				c.secrets++
			}
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
			if c.decode(id, doc, &ing) {
				c.ingresses = append(c.ingresses, &ing)
			}
		case "monitoring.coreos.com/v1/ServiceMonitor":
			c.serviceMonitor(id, doc)
		default:
			c.fail("%s: unexpected kind (add it to k8scheck if the chart now renders it)", id)
		}
	}
	if len(c.kinds) == 0 {
		c.fail("nothing was rendered")
	}
	for _, d := range c.deployments {
		// The chart's own Secret is hashed into the pods so a change rolls them; without one
		// there is nothing to hash (Secrets made outside the chart roll by secretRotation).
		if _, ok := d.Spec.Template.Annotations["checksum/secret"]; ok != (c.secrets > 0) {
			c.fail("apps/v1 Deployment %s: %d Secret(s) rendered but checksum/secret present=%v: it must hash the chart's Secret exactly when there is one", d.Name, c.secrets, ok)
		}
	}
	for _, ing := range c.ingresses {
		c.ingress(ing)
	}
}

// ingress checks that every path is a public route and reaches a port of a rendered Service.
func (c *checker) ingress(ing *networkingv1.Ingress) {
	id := "networking.k8s.io/v1 Ingress " + ing.Name
	for _, r := range ing.Spec.Rules {
		if r.HTTP == nil {
			c.fail("%s: a rule without http paths", id)
			continue
		}
		for _, p := range r.HTTP.Paths {
			want, public := publicPaths[p.Path]
			if !public {
				c.fail("%s: path %s is not a public route (only /api/github/hook, /mcp and /ui/)", id, p.Path)
			} else if p.PathType == nil || *p.PathType != want {
				c.fail("%s: path %s must be pathType %s", id, p.Path, want)
			}
			svc := p.Backend.Service
			if svc == nil {
				c.fail("%s: path %s has no service backend", id, p.Path)
				continue
			}
			found := false
			for _, name := range c.services[svc.Name] {
				found = found || name == svc.Port.Name
			}
			if !found {
				c.fail("%s: path %s routes to service %s port %q, which the chart does not render", id, p.Path, svc.Name, svc.Port.Name)
			}
		}
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
		env := map[string]corev1.EnvVar{}
		for _, e := range ct.Env {
			if _, dup := env[e.Name]; dup {
				c.fail("%s: %s is set twice", cid, e.Name)
			}
			env[e.Name] = e
			// A *_FILE variable holds a path, not the secret.
			if e.Value != "" && !strings.HasSuffix(e.Name, "_FILE") && (strings.Contains(e.Name, "SECRET") || strings.Contains(e.Name, "KEY") || strings.Contains(e.Name, "DSN") || strings.Contains(e.Name, "TOKEN")) {
				c.fail("%s: %s is set in clear; it must come from a Secret", cid, e.Name)
			}
		}
		for _, want := range []string{"GITHUB_APP_INTEGRATION_ID", "GITHUB_APP_WEBHOOK_SECRET", "GITHUB_APP_PRIVATE_KEY_FILE"} {
			if _, ok := env[want]; !ok {
				c.fail("%s: %s is not set", cid, want)
			}
		}
		if _, ok := env["GITHUB_APP_PRIVATE_KEY"]; ok {
			c.fail("%s: GITHUB_APP_PRIVATE_KEY passes the PEM as an environment variable; mount it and set GITHUB_APP_PRIVATE_KEY_FILE", cid)
		}
		if e, ok := env["GITHUB_APP_PRIVATE_KEY_FILE"]; ok {
			c.secretFile(cid, pod, ct, e.Value)
		}
	}
}

// secretFile checks that file is an item of a Secret volume mounted read-only in the container.
func (c *checker) secretFile(cid string, pod corev1.PodSpec, ct corev1.Container, file string) {
	for _, m := range ct.VolumeMounts {
		rel, ok := strings.CutPrefix(file, strings.TrimSuffix(m.MountPath, "/")+"/")
		if !ok {
			continue
		}
		if !m.ReadOnly {
			c.fail("%s: %s is on volume %s, which is not mounted read-only", cid, file, m.Name)
		}
		for _, v := range pod.Volumes {
			if v.Name != m.Name {
				continue
			}
			if v.Secret == nil {
				c.fail("%s: %s is on volume %s, which is not a Secret", cid, file, m.Name)
				return
			}
			for _, it := range v.Secret.Items {
				if path.Clean(it.Path) == rel {
					return
				}
			}
			c.fail("%s: %s is not an item of Secret volume %s", cid, file, m.Name)
			return
		}
		c.fail("%s: volume %s is mounted but not declared", cid, m.Name)
		return
	}
	c.fail("%s: %s is on no volume mount", cid, file)
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
