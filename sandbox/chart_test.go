package sandbox

import (
	"bytes"
	"errors"
	"go/build"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The Helm chart, rendered with helm itself: these tests read what `helm template` produces
// (docs/INSTALL.md), as Kubernetes would receive it.

const (
	chartDir = "../charts/ralph-gate"
	// A go-installed helm assumes Kubernetes v1.20 (its version is normally set by ldflags);
	// the chart needs 1.25 or later. .ci/helm.sh renders with the same version.
	chartKubeVersion = "1.31.0"
)

// helmBinary finds helm on PATH or in $(go env GOPATH)/bin, where `bash .ci/helm.sh install`
// puts it. In CI (CI=true) a missing helm fails the test; elsewhere the test is skipped.
func helmBinary(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	gopath := build.Default.GOPATH
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil && strings.TrimSpace(string(out)) != "" {
		gopath = strings.TrimSpace(string(out))
	}
	for _, dir := range filepath.SplitList(gopath) {
		p := filepath.Join(dir, "bin", "helm")
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	const hint = "helm is neither on PATH nor in $(go env GOPATH)/bin; `bash .ci/helm.sh install` installs it"
	if os.Getenv("CI") == "true" {
		t.Fatal(hint)
	}
	t.Skip(hint)
	return ""
}

// helmTemplate renders the chart as release "ralph-gate" in namespace "ralph" with the given
// values arguments (-f FILE, --set K=V); a refusal is returned as an error holding helm's output.
func helmTemplate(t *testing.T, args ...string) (*manifests, error) {
	t.Helper()
	helm := helmBinary(t)
	cmd := exec.Command(helm, append([]string{"template", "ralph-gate", chartDir, "--namespace", "ralph",
		"--kube-version", chartKubeVersion}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("run helm: %v", err)
		}
		return nil, errors.New(stderr.String())
	}
	m, err := parseManifests(stdout.Bytes())
	if err != nil {
		t.Fatalf("helm template %v: %v\n%s", args, err, stdout.String())
	}
	return m, nil
}

func mustTemplate(t *testing.T, args ...string) *manifests {
	t.Helper()
	m, err := helmTemplate(t, args...)
	if err != nil {
		t.Fatalf("helm template %v: %v", args, err)
	}
	return m
}

// The parts of the Kubernetes objects these tests read, as the API server would decode them.
type objectMeta struct {
	Name        string            `yaml:"name"`
	Annotations map[string]string `yaml:"annotations"`
}

type k8sObject struct {
	APIVersion string            `yaml:"apiVersion"`
	Kind       string            `yaml:"kind"`
	Metadata   objectMeta        `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`       // ConfigMap
	StringData map[string]string `yaml:"stringData"` // Secret
	Spec       yaml.Node         `yaml:"spec"`
}

type keyToPath struct {
	Key  string `yaml:"key"`
	Path string `yaml:"path"`
}

type podVolume struct {
	Name      string `yaml:"name"`
	ConfigMap *struct {
		Name  string      `yaml:"name"`
		Items []keyToPath `yaml:"items"`
	} `yaml:"configMap"`
	Secret *struct {
		SecretName  string      `yaml:"secretName"`
		DefaultMode *int        `yaml:"defaultMode"`
		Items       []keyToPath `yaml:"items"`
	} `yaml:"secret"`
	EmptyDir              *yaml.Node `yaml:"emptyDir"`
	PersistentVolumeClaim *struct {
		ClaimName string `yaml:"claimName"`
	} `yaml:"persistentVolumeClaim"`
}

type envVar struct {
	Name      string  `yaml:"name"`
	Value     *string `yaml:"value"`
	ValueFrom *struct {
		SecretKeyRef *struct {
			Name string `yaml:"name"`
			Key  string `yaml:"key"`
		} `yaml:"secretKeyRef"`
	} `yaml:"valueFrom"`
}

type volumeMount struct {
	Name      string `yaml:"name"`
	MountPath string `yaml:"mountPath"`
	ReadOnly  bool   `yaml:"readOnly"`
}

type container struct {
	Name         string        `yaml:"name"`
	Args         []string      `yaml:"args"`
	Env          []envVar      `yaml:"env"`
	VolumeMounts []volumeMount `yaml:"volumeMounts"`
}

type deploymentSpec struct {
	Template struct {
		Metadata objectMeta `yaml:"metadata"`
		Spec     struct {
			Containers []container `yaml:"containers"`
			Volumes    []podVolume `yaml:"volumes"`
		} `yaml:"spec"`
	} `yaml:"template"`
}

type ingressPath struct {
	Path     string `yaml:"path"`
	PathType string `yaml:"pathType"`
	Backend  struct {
		Service struct {
			Name string `yaml:"name"`
			Port struct {
				Name string `yaml:"name"`
			} `yaml:"port"`
		} `yaml:"service"`
	} `yaml:"backend"`
}

type ingressSpec struct {
	Rules []struct {
		Host string `yaml:"host"`
		HTTP struct {
			Paths []ingressPath `yaml:"paths"`
		} `yaml:"http"`
	} `yaml:"rules"`
}

type servicePort struct {
	Name       string `yaml:"name"`
	TargetPort string `yaml:"targetPort"`
}

type serviceSpec struct {
	Ports []servicePort `yaml:"ports"`
}

// manifests is one rendering of the chart.
type manifests struct {
	objects []k8sObject
}

func parseManifests(data []byte) (*manifests, error) {
	m := &manifests{}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var o k8sObject
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			return m, nil
		}
		if err != nil {
			return nil, err
		}
		if o.Kind != "" {
			m.objects = append(m.objects, o)
		}
	}
}

// one returns the only object of a kind; it fails the test when there is not exactly one.
func (m *manifests) one(t *testing.T, kind string) k8sObject {
	t.Helper()
	var found []k8sObject
	for _, o := range m.objects {
		if o.Kind == kind {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one %s rendered, got %d", kind, len(found))
	}
	return found[0]
}

func (m *manifests) count(kind string) int {
	n := 0
	for _, o := range m.objects {
		if o.Kind == kind {
			n++
		}
	}
	return n
}

func decodeSpec[T any](t *testing.T, o k8sObject) T {
	t.Helper()
	var spec T
	if err := o.Spec.Decode(&spec); err != nil {
		t.Fatalf("%s %s: spec: %v", o.Kind, o.Metadata.Name, err)
	}
	return spec
}

// deployment returns the Deployment's metadata and its pod template.
func (m *manifests) deployment(t *testing.T) (k8sObject, deploymentSpec) {
	t.Helper()
	o := m.one(t, "Deployment")
	return o, decodeSpec[deploymentSpec](t, o)
}

// ingressPaths returns every path of every rule of the Ingress (none without an Ingress).
func (m *manifests) ingressPaths(t *testing.T) []ingressPath {
	t.Helper()
	if m.count("Ingress") == 0 {
		return nil
	}
	var out []ingressPath
	for _, r := range decodeSpec[ingressSpec](t, m.one(t, "Ingress")).Rules {
		out = append(out, r.HTTP.Paths...)
	}
	return out
}

func (c container) env(name string) (envVar, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e, true
		}
	}
	return envVar{}, false
}

// TestChartIngressRoutesMCP: with mcp.expose the Ingress routes /mcp (exactly) to the chart's
// Service on the port the container serves, next to the webhook; without it only the webhook
// is public.
func TestChartIngressRoutesMCP(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		wantMCP bool
	}{
		{"mcp-values: exposed", []string{"-f", chartDir + "/ci/mcp-values.yaml"}, true},
		{"mcp-values with mcp.expose=false", []string{"-f", chartDir + "/ci/mcp-values.yaml", "--set", "mcp.expose=false"}, false},
		{"ingress-values: agents configured, not exposed", []string{"-f", chartDir + "/ci/ingress-values.yaml"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mustTemplate(t, tt.args...)
			svc := m.one(t, "Service")
			ports := decodeSpec[serviceSpec](t, svc).Ports
			_, dep := m.deployment(t)
			var paths []string
			for _, p := range m.ingressPaths(t) {
				paths = append(paths, p.Path)
				if p.PathType != "Exact" {
					t.Errorf("path %s: pathType %s, want Exact", p.Path, p.PathType)
				}
				if p.Backend.Service.Name != svc.Metadata.Name {
					t.Errorf("path %s goes to service %q, want the chart's %q", p.Path, p.Backend.Service.Name, svc.Metadata.Name)
				}
				if !slices.Contains(ports, servicePort{Name: p.Backend.Service.Port.Name, TargetPort: "http"}) {
					t.Errorf("path %s goes to port %q, which is not the service's port to the container's http port", p.Path, p.Backend.Service.Port.Name)
				}
			}
			if len(dep.Template.Spec.Containers) != 1 {
				t.Fatalf("want one container, got %d", len(dep.Template.Spec.Containers))
			}
			want := []string{"/api/github/hook"}
			if tt.wantMCP {
				want = append(want, "/mcp")
			}
			if !slices.Equal(paths, want) {
				t.Errorf("Ingress paths %v, want %v", paths, want)
			}
		})
	}
}

// TestChartSecretRotation: the pods roll (their template changes) when a Secret they read
// changes. The chart's own Secret is hashed into checksum/secret; a Secret made outside the
// chart cannot be hashed, so there is no checksum/secret, and secretRotation.revision (or
// Stakater Reloader's annotation, secretRotation.reloader) is how it rolls.
func TestChartSecretRotation(t *testing.T) {
	t.Parallel()
	existing := []string{"-f", chartDir + "/ci/existing-secret-values.yaml"}
	defaults := []string{"-f", chartDir + "/ci/default-values.yaml"}
	podAnnotations := func(t *testing.T, args ...string) map[string]string {
		_, dep := mustTemplate(t, args...).deployment(t)
		return dep.Template.Metadata.Annotations
	}
	tests := []struct {
		name       string
		before     []string
		after      []string
		wantRolled bool
	}{
		{"chart's Secret: webhook secret changed", defaults, append(slices.Clone(defaults), "--set", "github.webhookSecret=another-ci-placeholder-secret"), true},
		{"chart's Secret: nothing changed", defaults, defaults, false},
		{"existing Secret: revision set", existing, append(slices.Clone(existing), "--set", "secretRotation.revision=2025-06-01"), true},
		{"existing Secret: revision bumped", append(slices.Clone(existing), "--set", "secretRotation.revision=1"),
			append(slices.Clone(existing), "--set", "secretRotation.revision=2"), true},
		{"existing Secret: revision kept", append(slices.Clone(existing), "--set", "secretRotation.revision=1"),
			append(slices.Clone(existing), "--set", "secretRotation.revision=1"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, after := podAnnotations(t, tt.before...), podAnnotations(t, tt.after...)
			rolled := !mapsEqual(before, after)
			if rolled != tt.wantRolled {
				t.Errorf("pod annotations before %v, after %v: rolled=%v, want %v", before, after, rolled, tt.wantRolled)
			}
		})
	}

	t.Run("checksum/secret only when the chart renders a Secret", func(t *testing.T) {
		for _, args := range [][]string{defaults, existing, {"-f", chartDir + "/ci/mcp-values.yaml"}} {
			m := mustTemplate(t, args...)
			_, dep := m.deployment(t)
			_, has := dep.Template.Metadata.Annotations["checksum/secret"]
			if has != (m.count("Secret") > 0) {
				t.Errorf("%v: %d Secret(s) rendered, checksum/secret present=%v", args, m.count("Secret"), has)
			}
		}
	})

	t.Run("reloader lists the Secrets made outside the chart", func(t *testing.T) {
		for _, tt := range []struct {
			args []string
			want string
		}{
			{append(slices.Clone(existing), "--set", "secretRotation.reloader=true"), "ralph-gate-github,ralph-gate-postgres"},
			{[]string{"-f", chartDir + "/ci/mcp-values.yaml"}, "ralph-gate-github,ralph-gate-agent-tokens"},
			{existing, ""},
			{append(slices.Clone(defaults), "--set", "secretRotation.reloader=true"), ""}, // nothing outside the chart
		} {
			dep, _ := mustTemplate(t, tt.args...).deployment(t)
			if got := dep.Metadata.Annotations["secret.reloader.stakater.com/reload"]; got != tt.want {
				t.Errorf("%v: secret.reloader.stakater.com/reload=%q, want %q", tt.args, got, tt.want)
			}
		}
	})
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestChartPrivateKeyIsAFile: the App's private key reaches the pod as a read-only file from
// the App's Secret (the key named by github.existingSecretKeys.privateKey), named by
// GITHUB_APP_PRIVATE_KEY_FILE, never as the PEM in an environment variable.
func TestChartPrivateKeyIsAFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name             string
		args             []string
		secret, key      string
		chartSecretItems bool
	}{
		{"inline values (the chart's Secret)", []string{"-f", chartDir + "/ci/default-values.yaml"}, "ralph-gate", "private-key", true},
		{"existing Secret, own key name", []string{"-f", chartDir + "/ci/existing-secret-values.yaml", "--set", "github.existingSecretKeys.privateKey=app.pem"},
			"ralph-gate-github", "app.pem", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mustTemplate(t, tt.args...)
			_, dep := m.deployment(t)
			ct := dep.Template.Spec.Containers[0]
			if _, ok := ct.env("GITHUB_APP_PRIVATE_KEY"); ok {
				t.Error("GITHUB_APP_PRIVATE_KEY is set: the PEM must not be an environment variable")
			}
			e, ok := ct.env("GITHUB_APP_PRIVATE_KEY_FILE")
			if !ok || e.Value == nil {
				t.Fatal("GITHUB_APP_PRIVATE_KEY_FILE is not set to a path")
			}
			file := *e.Value
			var mount volumeMount
			for _, vm := range ct.VolumeMounts {
				if strings.HasPrefix(file, strings.TrimSuffix(vm.MountPath, "/")+"/") {
					mount = vm
				}
			}
			if mount.Name == "" || !mount.ReadOnly {
				t.Fatalf("%s is not on a read-only mount (%+v)", file, ct.VolumeMounts)
			}
			var vol podVolume
			for _, v := range dep.Template.Spec.Volumes {
				if v.Name == mount.Name {
					vol = v
				}
			}
			if vol.Secret == nil || vol.Secret.SecretName != tt.secret {
				t.Fatalf("volume %s is not Secret %s: %+v", mount.Name, tt.secret, vol)
			}
			rel := strings.TrimPrefix(file, strings.TrimSuffix(mount.MountPath, "/")+"/")
			if want := []keyToPath{{Key: tt.key, Path: rel}}; !slices.Equal(vol.Secret.Items, want) {
				t.Errorf("Secret volume items %+v, want exactly %+v (the key, and nothing else of the Secret)", vol.Secret.Items, want)
			}
			if vol.Secret.DefaultMode == nil || *vol.Secret.DefaultMode&0o007 != 0 {
				t.Errorf("defaultMode %v: the key must not be readable by others", vol.Secret.DefaultMode)
			}
			if tt.chartSecretItems {
				if _, ok := m.one(t, "Secret").StringData[tt.key]; !ok {
					t.Errorf("the chart's Secret has no key %s", tt.key)
				}
			}
		})
	}
}

// TestChartRefusesValuesThatCannotWork: helm template fails, naming the key, for values that
// would otherwise render and crash-loop the pod: config.* outside what ralph-gate decodes
// (values.schema.json) and MCP agents whose token cannot reach the pod.
func TestChartRefusesValuesThatCannotWork(t *testing.T) {
	t.Parallel()
	defaults := []string{"-f", chartDir + "/ci/default-values.yaml"}
	agent := "config.mcp.agents[0]"
	tests := []struct {
		name string
		set  []string
		want string
	}{
		{"a logging level ralph-gate does not know", []string{"config.logging.level=verbose"}, "/config/logging/level': value must be one of 'debug', 'info', 'warn', 'error'"},
		{"a misspelt config key", []string{"config.projekts[0].owner=acme"}, "additional properties 'projekts' not allowed"},
		{"a misspelt nested key", []string{"config.enforcement.worker=4"}, "additional properties 'worker' not allowed"},
		{"a duration Go cannot parse", []string{"config.reconcile.interval=10 minutes"}, "/config/reconcile/interval"},
		{"a log format ralph-gate does not know", []string{"config.logging.format=text"}, "/config/logging/format"},
		{"a state kind ralph-gate does not know", []string{"config.workflow.states[0].name=Backlog", "config.workflow.states[0].kind=inbox"}, "/config/workflow/states/0/kind"},
		{"mcp.expose without an Ingress", []string{"mcp.expose=true", agent + ".name=a", agent + ".token_env=A_TOKEN", "mcp.agentTokensSecret=tokens"}, "mcp.expose: /mcp is added to the Ingress"},
		{"mcp.expose without agents", []string{"mcp.expose=true", "ingress.enabled=true", "ingress.host=h.example.com"}, "mcp.expose: config.mcp.agents lists no agent"},
		{"a token_env nothing sets", []string{agent + ".name=a", agent + ".token_env=A_TOKEN"}, "config.mcp.agents[0].token_env: nothing sets A_TOKEN"},
		{"a token in clear in the ConfigMap", []string{agent + ".name=a", agent + ".token=ci-placeholder-token-0001"}, "config.mcp.agents[0].token: a token in config.yml sits in clear"},
		{"an agentTokensSecret nobody reads", []string{"mcp.agentTokensSecret=tokens"}, "mcp.agentTokensSecret: no config.mcp.agents[].token_env is read from tokens"},
		{"the PEM in extraEnv", []string{"extraEnv[0].name=GITHUB_APP_PRIVATE_KEY", "extraEnv[0].value=x"}, "extraEnv: GITHUB_APP_PRIVATE_KEY"},
		{"no fsGroup to read the key file", []string{"podSecurityContext.fsGroup=null"}, "podSecurityContext.fsGroup"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := slices.Clone(defaults)
			for _, s := range tt.set {
				args = append(args, "--set", s)
			}
			_, err := helmTemplate(t, args...)
			if err == nil {
				t.Fatalf("helm template %v rendered; it must fail naming %q", tt.set, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("helm template %v failed without %q:\n%v", tt.set, tt.want, err)
			}
		})
	}
}

// TestChartAgentTokensFromSecret: each config.mcp.agents[].token_env is read from the key of
// the same name in mcp.agentTokensSecret, once, unless another value already sets it.
func TestChartAgentTokensFromSecret(t *testing.T) {
	t.Parallel()
	agents := []string{
		"config.mcp.agents[0].name=a", "config.mcp.agents[0].token_env=TOKEN_A",
		"config.mcp.agents[1].name=b", "config.mcp.agents[1].token_env=TOKEN_B",
		"config.mcp.agents[2].name=c", "config.mcp.agents[2].token_env=RALPH_GATE_MCP_TOKEN_ANALYST",
		"config.mcp.agents[3].name=d", "config.mcp.agents[3].token_sha256=" + strings.Repeat("ab", 32),
	}
	args := []string{"-f", chartDir + "/ci/default-values.yaml", "--set", "mcp.agentTokensSecret=agent-tokens",
		"--set", "mcp.tokens.analyst=ci-placeholder-token-of-enough-length"}
	for _, a := range agents {
		args = append(args, "--set", a)
	}
	_, dep := mustTemplate(t, args...).deployment(t)
	got := map[string]string{}
	for _, e := range dep.Template.Spec.Containers[0].Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && (strings.HasPrefix(e.Name, "TOKEN_") || strings.HasPrefix(e.Name, "RALPH_GATE_MCP_")) {
			if _, dup := got[e.Name]; dup {
				t.Errorf("%s is set twice", e.Name)
			}
			got[e.Name] = e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		}
	}
	want := map[string]string{
		"TOKEN_A":                      "agent-tokens/TOKEN_A",
		"TOKEN_B":                      "agent-tokens/TOKEN_B",
		"RALPH_GATE_MCP_TOKEN_ANALYST": "ralph-gate/mcp-token-analyst", // mcp.tokens wins
	}
	if !mapsEqual(got, want) {
		t.Errorf("token variables %v, want %v", got, want)
	}
}
