package deploytest

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"
	"testing"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/runner/config"
)

const chartDir = "../helm/akira"

// rendered is a chart rendered for one value set: every object decoded strictly into its API type.
type rendered struct {
	notes        string
	appVersion   string
	configMaps   map[string]*corev1.ConfigMap
	secrets      map[string]*corev1.Secret
	services     map[string]*corev1.Service
	deployments  map[string]*appsv1.Deployment
	statefulSets map[string]*appsv1.StatefulSet
	ingresses    map[string]*networkingv1.Ingress
	policies     map[string]*networkingv1.NetworkPolicy
	pdbs         map[string]*policyv1.PodDisruptionBudget
	monitors     map[string]*monitoringv1.ServiceMonitor
	scaled       map[string]*kedav1alpha1.ScaledObject
	triggerAuths map[string]*kedav1alpha1.TriggerAuthentication
}

// render renders the chart as `helm install prod ./deploy/helm/akira -n akira --set …` would.
func render(t *testing.T, values map[string]any) (*rendered, error) {
	t.Helper()
	chrt, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	vals, err := chartutil.ToRenderValues(chrt, values, chartutil.ReleaseOptions{Name: "prod", Namespace: "akira", IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatalf("values: %v", err)
	}
	files, err := engine.Render(chrt, vals)
	if err != nil {
		return nil, err
	}
	r := &rendered{appVersion: chrt.Metadata.AppVersion,
		configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}, services: map[string]*corev1.Service{},
		deployments: map[string]*appsv1.Deployment{}, statefulSets: map[string]*appsv1.StatefulSet{},
		ingresses: map[string]*networkingv1.Ingress{}, policies: map[string]*networkingv1.NetworkPolicy{},
		pdbs: map[string]*policyv1.PodDisruptionBudget{}, monitors: map[string]*monitoringv1.ServiceMonitor{},
		scaled: map[string]*kedav1alpha1.ScaledObject{}, triggerAuths: map[string]*kedav1alpha1.TriggerAuthentication{}}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		switch {
		case strings.HasSuffix(name, "NOTES.txt"):
			r.notes = files[name]
			continue
		case path.Ext(name) != ".yaml":
			continue
		}
		for i, doc := range strings.Split(files[name], "\n---") {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			if err := r.add([]byte(doc)); err != nil {
				t.Fatalf("%s, document %d: %v\n%s", name, i+1, err, doc)
			}
		}
	}
	return r, nil
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// add decodes one object strictly: an unknown or misspelled field is an error, as the API server's
// strict field validation would make it.
func (r *rendered) add(doc []byte) error {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return err
	}
	strict := func(v any) error { return yaml.UnmarshalStrict(doc, v) }
	var name string
	var err error
	switch tm.APIVersion + " " + tm.Kind {
	case "v1 ConfigMap":
		o := &corev1.ConfigMap{}
		err, name = strict(o), o.Name
		r.configMaps[name] = o
	case "v1 Secret":
		o := &corev1.Secret{}
		err, name = strict(o), o.Name
		r.secrets[name] = o
	case "v1 Service":
		o := &corev1.Service{}
		err, name = strict(o), o.Name
		r.services[name] = o
	case "apps/v1 Deployment":
		o := &appsv1.Deployment{}
		err, name = strict(o), o.Name
		r.deployments[name] = o
	case "apps/v1 StatefulSet":
		o := &appsv1.StatefulSet{}
		err, name = strict(o), o.Name
		r.statefulSets[name] = o
	case "networking.k8s.io/v1 Ingress":
		o := &networkingv1.Ingress{}
		err, name = strict(o), o.Name
		r.ingresses[name] = o
	case "networking.k8s.io/v1 NetworkPolicy":
		o := &networkingv1.NetworkPolicy{}
		err, name = strict(o), o.Name
		r.policies[name] = o
	case "policy/v1 PodDisruptionBudget":
		o := &policyv1.PodDisruptionBudget{}
		err, name = strict(o), o.Name
		r.pdbs[name] = o
	case "monitoring.coreos.com/v1 ServiceMonitor":
		o := &monitoringv1.ServiceMonitor{}
		err, name = strict(o), o.Name
		r.monitors[name] = o
	case "keda.sh/v1alpha1 ScaledObject":
		o := &kedav1alpha1.ScaledObject{}
		err, name = strict(o), o.Name
		r.scaled[name] = o
	case "keda.sh/v1alpha1 TriggerAuthentication":
		o := &kedav1alpha1.TriggerAuthentication{}
		err, name = strict(o), o.Name
		r.triggerAuths[name] = o
	default:
		return fmt.Errorf("%s %s: a kind this test does not know; add its API type", tm.APIVersion, tm.Kind)
	}
	if err == nil && name == "" {
		err = fmt.Errorf("%s without a name", tm.Kind)
	}
	return err
}

func (r *rendered) kinds() []string {
	var out []string
	add := func(kind string, n int) {
		for range n {
			out = append(out, kind)
		}
	}
	add("ConfigMap", len(r.configMaps))
	add("Secret", len(r.secrets))
	add("Service", len(r.services))
	add("Deployment", len(r.deployments))
	add("StatefulSet", len(r.statefulSets))
	add("Ingress", len(r.ingresses))
	add("NetworkPolicy", len(r.policies))
	add("PodDisruptionBudget", len(r.pdbs))
	add("ServiceMonitor", len(r.monitors))
	add("ScaledObject", len(r.scaled))
	add("TriggerAuthentication", len(r.triggerAuths))
	sort.Strings(out)
	return out
}

func mustRender(t *testing.T, values map[string]any) *rendered {
	t.Helper()
	r, err := render(t, values)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return r
}

func env(c corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

func selects(t *testing.T, sel *metav1.LabelSelector, podLabels map[string]string) bool {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatalf("selector: %v", err)
	}
	return s.Matches(labels.Set(podLabels))
}

// checkCommon holds for every value set: the web and worker deployments run the images of the
// chart's appVersion with resources and probes, the operator configuration is valid and names
// only agents the worker image has, and the disruption budgets cover the pods they are for.
func checkCommon(t *testing.T, r *rendered) {
	t.Helper()
	web, worker := r.deployments["prod-akira-web"], r.deployments["prod-akira-worker"]
	if web == nil || worker == nil {
		t.Fatalf("deployments = %v; want prod-akira-web and prod-akira-worker", slices.Sorted(maps.Keys(r.deployments)))
	}
	images := map[string]string{"prod-akira-web": "ghcr.io/akira-bot/akira:" + r.appVersion, "prod-akira-worker": "ghcr.io/akira-bot/akira-worker:" + r.appVersion}
	for name, d := range map[string]*appsv1.Deployment{"prod-akira-web": web, "prod-akira-worker": worker} {
		c := d.Spec.Template.Spec.Containers[0]
		if c.Image != images[name] {
			t.Errorf("%s image = %s; want %s", name, c.Image, images[name])
		}
		if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() || c.Resources.Requests.Cpu().IsZero() {
			t.Errorf("%s: resources %v lack a CPU request or a memory request and limit", name, c.Resources)
		}
		if c.ReadinessProbe == nil || c.LivenessProbe == nil || c.StartupProbe == nil {
			t.Errorf("%s lacks a readiness, liveness or startup probe", name)
		}
		if !selects(t, d.Spec.Selector, d.Spec.Template.Labels) {
			t.Errorf("%s's selector does not select its own pods", name)
		}
		if v := env(c, "REDIS_PASSWORD"); v == nil || v.ValueFrom == nil || v.ValueFrom.SecretKeyRef == nil {
			if _, own := r.statefulSets["prod-akira-redis"]; own {
				t.Errorf("%s: REDIS_PASSWORD does not come from a Secret", name)
			}
		} else if ref := v.ValueFrom.SecretKeyRef; r.statefulSets["prod-akira-redis"] != nil {
			s := r.secrets[ref.Name]
			if s == nil || len(s.Data[ref.Key]) < 16 {
				t.Errorf("%s: REDIS_PASSWORD from %s/%s, which the chart does not render with a password", name, ref.Name, ref.Key)
			}
		}
	}
	for name, pdb := range r.pdbs {
		d := r.deployments[name]
		if d == nil || !selects(t, pdb.Spec.Selector, d.Spec.Template.Labels) {
			t.Errorf("disruption budget %s covers no deployment of its name", name)
		}
	}
	if len(r.pdbs) != 2 {
		t.Errorf("disruption budgets = %v; want web and worker", slices.Sorted(maps.Keys(r.pdbs)))
	}
	cm := r.configMaps["prod-akira"]
	if cm == nil {
		t.Fatal("no operator configuration ConfigMap")
	}
	op, err := config.ParseOperator([]byte(cm.Data["akira.yaml"]))
	if err != nil {
		t.Fatalf("the chart's operator configuration: %v", err)
	}
	checkAgentsInWorkerImage(t, "the chart's config", op)
}

func TestChartDefaults(t *testing.T) {
	r := mustRender(t, nil)
	checkCommon(t, r)
	want := []string{"ConfigMap", "Deployment", "Deployment", "NetworkPolicy", "PodDisruptionBudget", "PodDisruptionBudget",
		"Secret", "Service", "Service", "Service", "Service", "StatefulSet"}
	if got := r.kinds(); !slices.Equal(got, want) {
		t.Errorf("objects = %v; want %v", got, want)
	}
	redis := r.statefulSets["prod-akira-redis"]
	if redis == nil {
		t.Fatal("no Redis StatefulSet by default")
	}
	c := redis.Spec.Template.Spec.Containers[0]
	if !slices.Contains(c.Args, "--appendonly") || c.Args[slices.Index(c.Args, "--appendonly")+1] != "yes" || len(redis.Spec.VolumeClaimTemplates) != 1 {
		t.Errorf("Redis without its append-only file on a volume: args %v", c.Args)
	}
	if c.Resources.Limits.Memory().IsZero() || c.LivenessProbe == nil || c.ReadinessProbe == nil {
		t.Error("Redis lacks a memory limit or probes")
	}
	secret := r.secrets["prod-akira-redis"]
	if secret == nil || len(secret.Data["password"]) < 32 || secret.Annotations["helm.sh/resource-policy"] != "keep" {
		t.Errorf("Redis password Secret = %+v; want a generated 32-character password, kept", secret)
	}
	if v := env(c, "REDIS_PASSWORD"); v == nil || v.ValueFrom.SecretKeyRef.Name != "prod-akira-redis" {
		t.Error("Redis does not require the generated password")
	}
	worker := r.deployments["prod-akira-worker"].Spec.Template.Spec.Containers[0]
	if got := env(worker, "REDIS_URL"); got == nil || got.Value != "redis://prod-akira-redis:6379/0" {
		t.Errorf("worker REDIS_URL = %+v", got)
	}

	// Only Akira's web and worker pods reach Redis.
	np := r.policies["prod-akira-redis"]
	if np == nil {
		t.Fatal("no NetworkPolicy for Redis")
	}
	if !selects(t, &np.Spec.PodSelector, redis.Spec.Template.Labels) || !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		t.Error("the NetworkPolicy does not govern the Redis pods' ingress")
	}
	allowed := func(podLabels map[string]string) bool {
		for _, rule := range np.Spec.Ingress {
			for _, peer := range rule.From {
				if peer.PodSelector != nil && peer.NamespaceSelector == nil && peer.IPBlock == nil && selects(t, peer.PodSelector, podLabels) {
					return true
				}
			}
		}
		return false
	}
	for name, d := range r.deployments {
		if !allowed(d.Spec.Template.Labels) {
			t.Errorf("%s may not reach Redis", name)
		}
	}
	for _, stranger := range []map[string]string{
		{"app": "something-else"},
		{"app.kubernetes.io/name": "akira", "app.kubernetes.io/instance": "other-release", "app.kubernetes.io/component": "worker"},
		{"app.kubernetes.io/name": "akira", "app.kubernetes.io/instance": "prod", "app.kubernetes.io/component": "redis-client"},
	} {
		if allowed(stranger) {
			t.Errorf("a pod labelled %v may reach Redis", stranger)
		}
	}
	if !strings.Contains(r.notes, "Webhook URL") || !strings.Contains(r.notes, "ingress is off") {
		t.Errorf("NOTES.txt does not say how to point the webhook:\n%s", r.notes)
	}
}

func TestChartExternalRedis(t *testing.T) {
	r := mustRender(t, map[string]any{
		"redis":                 map[string]any{"enabled": false},
		"externalRedisURL":      "rediss://redis.internal.example:6380/2",
		"externalRedisPassword": map[string]any{"secretName": "managed-redis", "key": "auth"},
	})
	checkCommon(t, r)
	if len(r.statefulSets) != 0 || len(r.policies) != 0 || r.secrets["prod-akira-redis"] != nil {
		t.Errorf("the chart's own Redis is rendered with redis.enabled=false: %v", r.kinds())
	}
	for name, d := range r.deployments {
		c := d.Spec.Template.Spec.Containers[0]
		if v := env(c, "REDIS_URL"); v == nil || v.Value != "rediss://redis.internal.example:6380/2" {
			t.Errorf("%s REDIS_URL = %+v", name, v)
		}
		if v := env(c, "REDIS_PASSWORD"); v == nil || v.ValueFrom.SecretKeyRef.Name != "managed-redis" || v.ValueFrom.SecretKeyRef.Key != "auth" {
			t.Errorf("%s REDIS_PASSWORD = %+v; want managed-redis/auth", name, v)
		}
	}
	// Without a URL the chart refuses to render, saying what is missing.
	if _, err := render(t, map[string]any{"redis": map[string]any{"enabled": false}}); err == nil || !strings.Contains(err.Error(), "externalRedisURL") {
		t.Errorf("redis.enabled=false without externalRedisURL: %v; want an error naming externalRedisURL", err)
	}
}

func TestChartAutoscaling(t *testing.T) {
	r := mustRender(t, map[string]any{"worker": map[string]any{"autoscaling": map[string]any{"enabled": true, "maxReplicas": 7}}})
	checkCommon(t, r)
	worker := r.deployments["prod-akira-worker"]
	if worker.Spec.Replicas != nil {
		t.Errorf("worker replicas = %d with autoscaling; KEDA owns them", *worker.Spec.Replicas)
	}
	so := r.scaled["prod-akira-worker"]
	if so == nil {
		t.Fatalf("no ScaledObject: %v", r.kinds())
	}
	if so.Spec.ScaleTargetRef == nil || so.Spec.ScaleTargetRef.Name != worker.Name || so.Spec.MaxReplicaCount == nil || *so.Spec.MaxReplicaCount != 7 {
		t.Errorf("ScaledObject targets %+v, max %v", so.Spec.ScaleTargetRef, so.Spec.MaxReplicaCount)
	}
	if len(so.Spec.Triggers) != 1 || so.Spec.Triggers[0].Type != "redis" {
		t.Fatalf("triggers = %+v", so.Spec.Triggers)
	}
	md := so.Spec.Triggers[0].Metadata
	// asynq keeps a queue's pending tasks in the list asynq:{<queue>}:pending.
	if want := fmt.Sprintf("asynq:{%s}:pending", queue.Queue); md["listName"] != want || md["address"] != "prod-akira-redis:6379" {
		t.Errorf("trigger metadata = %v; want listName %s on the chart's Redis", md, want)
	}
	ref := so.Spec.Triggers[0].AuthenticationRef
	ta := r.triggerAuths[ref.Name]
	if ref == nil || ta == nil || len(ta.Spec.SecretTargetRef) != 1 || ta.Spec.SecretTargetRef[0].Name != "prod-akira-redis" {
		t.Errorf("KEDA does not authenticate to Redis with the generated password: %+v", ta)
	}
	// With an external Redis, KEDA needs its address.
	if _, err := render(t, map[string]any{"redis": map[string]any{"enabled": false}, "externalRedisURL": "redis://r:6379/0",
		"worker": map[string]any{"autoscaling": map[string]any{"enabled": true}}}); err == nil || !strings.Contains(err.Error(), "redisAddress") {
		t.Errorf("autoscaling on an external Redis without its address: %v", err)
	}
}

func TestChartIngressAndMonitoring(t *testing.T) {
	r := mustRender(t, map[string]any{
		"ingress": map[string]any{"enabled": true, "host": "akira.corp.example", "className": "nginx", "tlsSecretName": "akira-tls"},
		"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true, "tokenSecret": map[string]any{"name": "akira-scraper"}}},
	})
	checkCommon(t, r)
	ing := r.ingresses["prod-akira"]
	if ing == nil || len(ing.Spec.Rules) != 1 || ing.Spec.Rules[0].Host != "akira.corp.example" || len(ing.Spec.TLS) != 1 {
		t.Fatalf("ingress = %+v", ing)
	}
	paths := ing.Spec.Rules[0].HTTP.Paths
	if len(paths) != 1 || paths[0].Path != "/webhook" || paths[0].Backend.Service.Name != "prod-akira" || paths[0].Backend.Service.Port.Name != "http" {
		t.Errorf("ingress paths = %+v; want only /webhook to the web Service", paths)
	}
	svc := r.services["prod-akira"]
	if svc == nil || !selects(t, &metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, r.deployments["prod-akira-web"].Spec.Template.Labels) {
		t.Error("the web Service does not select the web pods")
	}
	if !strings.Contains(r.notes, "https://akira.corp.example/webhook") {
		t.Errorf("NOTES.txt does not give the webhook URL:\n%s", r.notes)
	}
	sm := r.monitors["prod-akira"]
	if sm == nil || len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Path != "/metrics" {
		t.Fatalf("ServiceMonitor = %+v", sm)
	}
	var scraped []string
	for name, s := range r.services {
		if selects(t, &sm.Spec.Selector, s.Labels) {
			scraped = append(scraped, name)
		}
	}
	if sort.Strings(scraped); !slices.Equal(scraped, []string{"prod-akira-admin", "prod-akira-worker"}) {
		t.Errorf("the ServiceMonitor scrapes %v; want the admin Services of the web and worker pods", scraped)
	}
	if sm.Spec.Endpoints[0].Port != "admin" {
		t.Errorf("the ServiceMonitor scrapes port %q; want admin", sm.Spec.Endpoints[0].Port)
	}
	// /metrics wants a token: the ServiceMonitor sends the one in the Secret named.
	if a := sm.Spec.Endpoints[0].Authorization; a == nil || a.Type != "Bearer" || a.Credentials == nil ||
		a.Credentials.Name != "akira-scraper" || a.Credentials.Key != "token" {
		t.Errorf("the ServiceMonitor's authorization = %+v; want Bearer from Secret akira-scraper, key token", a)
	}
	// Without a token, the scrape is refused at render time, unless /metrics is left open.
	if _, err := render(t, map[string]any{"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true}}}); err == nil ||
		!strings.Contains(err.Error(), "metrics.serviceMonitor.tokenSecret.name") {
		t.Errorf("a ServiceMonitor without a token: %v", err)
	}
	open := mustRender(t, map[string]any{"metrics": map[string]any{"open": true, "serviceMonitor": map[string]any{"enabled": true}}})
	if a := open.monitors["prod-akira"].Spec.Endpoints[0].Authorization; a != nil {
		t.Errorf("metrics.open: the ServiceMonitor still sends %+v", a)
	}
	for name, d := range open.deployments {
		if v := env(d.Spec.Template.Spec.Containers[0], "AKIRA_METRICS"); v == nil || v.Value != "open" {
			t.Errorf("metrics.open: %s has AKIRA_METRICS %+v, want open", name, v)
		}
	}
	for name, d := range r.deployments {
		if v := env(d.Spec.Template.Spec.Containers[0], "AKIRA_METRICS"); v != nil {
			t.Errorf("%s has AKIRA_METRICS %+v; by default /metrics wants a token", name, v)
		}
	}
	// The admin address (API, dashboard, metrics, pprof) is never where the webhook is.
	for _, p := range svc.Spec.Ports {
		if p.Name == "admin" || p.Port == 9090 {
			t.Errorf("the webhook's Service exposes the admin port: %+v", p)
		}
	}
	for name, d := range r.deployments {
		c := d.Spec.Template.Spec.Containers[0]
		admin := false
		for _, p := range c.Ports {
			admin = admin || (p.Name == "admin" && p.ContainerPort == 9090)
		}
		env := map[string]string{}
		for _, e := range c.Env {
			env[e.Name] = e.Value
		}
		if !admin || env["AKIRA_ADMIN_ADDR"] != ":9090" {
			t.Errorf("%s: admin port %v, AKIRA_ADMIN_ADDR %q", name, admin, env["AKIRA_ADMIN_ADDR"])
		}
	}
}

// TestChartCacheVolume: by default the repository mirrors share the workspaces' emptyDir under a cap
// below its size limit; with worker.cache.persistence each worker replica keeps them on a volume of
// its own (a StatefulSet's claim of the given size and class), which KEDA scales and the disruption
// budget covers like the Deployment it replaces.
func TestChartCacheVolume(t *testing.T) {
	r := mustRender(t, nil)
	worker := r.deployments["prod-akira-worker"].Spec.Template.Spec.Containers[0]
	if v := env(worker, "AKIRA_CACHE_MAX"); v == nil || v.Value != "10GiB" {
		t.Errorf("default AKIRA_CACHE_MAX = %+v; want 10GiB, below the 20Gi emptyDir", v)
	}
	if v := env(worker, "AKIRA_CACHE_DIR"); v != nil {
		t.Errorf("default AKIRA_CACHE_DIR = %q; want the default, in the workspaces' emptyDir", v.Value)
	}
	if _, ok := r.statefulSets["prod-akira-worker"]; ok {
		t.Error("a worker StatefulSet without persistence")
	}

	r = mustRender(t, map[string]any{"worker": map[string]any{
		"autoscaling": map[string]any{"enabled": true},
		"cache":       map[string]any{"maxSize": "80GiB", "persistence": map[string]any{"enabled": true, "size": "100Gi", "storageClass": "fast-ssd"}}}})
	if _, ok := r.deployments["prod-akira-worker"]; ok {
		t.Fatal("the worker is still a Deployment with a persistent cache")
	}
	ss := r.statefulSets["prod-akira-worker"]
	if ss == nil {
		t.Fatalf("no worker StatefulSet: %v", r.kinds())
	}
	if ss.Spec.ServiceName == "" || r.services[ss.Spec.ServiceName] == nil {
		t.Errorf("StatefulSet serviceName %q is not a Service of the chart", ss.Spec.ServiceName)
	}
	if !selects(t, ss.Spec.Selector, ss.Spec.Template.Labels) {
		t.Error("the StatefulSet's selector does not select its own pods")
	}
	if pdb := r.pdbs["prod-akira-worker"]; pdb == nil || !selects(t, pdb.Spec.Selector, ss.Spec.Template.Labels) {
		t.Error("the worker disruption budget does not cover the StatefulSet's pods")
	}
	if len(ss.Spec.VolumeClaimTemplates) != 1 {
		t.Fatalf("claim templates = %+v", ss.Spec.VolumeClaimTemplates)
	}
	claim := ss.Spec.VolumeClaimTemplates[0]
	if size := claim.Spec.Resources.Requests.Storage(); claim.Name != "cache" || size.String() != "100Gi" ||
		claim.Spec.StorageClassName == nil || *claim.Spec.StorageClassName != "fast-ssd" {
		t.Errorf("claim %s of %v, class %v; want cache of 100Gi on fast-ssd", claim.Name, size, claim.Spec.StorageClassName)
	}
	c := ss.Spec.Template.Spec.Containers[0]
	var mount string
	for _, m := range c.VolumeMounts {
		if m.Name == "cache" {
			mount = m.MountPath
		}
	}
	dir, capEnv := env(c, "AKIRA_CACHE_DIR"), env(c, "AKIRA_CACHE_MAX")
	if mount == "" || dir == nil || !strings.HasPrefix(dir.Value, mount+"/") {
		t.Errorf("AKIRA_CACHE_DIR %+v is not on the cache volume (mounted at %q)", dir, mount)
	}
	if capEnv == nil || capEnv.Value != "80GiB" {
		t.Errorf("AKIRA_CACHE_MAX = %+v; want 80GiB", capEnv)
	}
	if w := env(c, "AKIRA_WORKDIR"); w == nil || strings.HasPrefix(w.Value, mount) {
		t.Errorf("workspaces %+v on the cache volume; they belong on the emptyDir", w)
	}
	so := r.scaled["prod-akira-worker"]
	if so == nil || so.Spec.ScaleTargetRef == nil || so.Spec.ScaleTargetRef.Kind != "StatefulSet" || so.Spec.ScaleTargetRef.Name != ss.Name {
		t.Errorf("ScaledObject target = %+v; want the worker StatefulSet", so)
	}
}
