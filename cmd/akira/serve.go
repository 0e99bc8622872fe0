package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/akira-bot/akira/app"
	"github.com/akira-bot/akira/app/admin"
	"github.com/akira-bot/akira/app/gh"
	"github.com/akira-bot/akira/jobs"
	"github.com/akira-bot/akira/jobs/audit"
	"github.com/akira-bot/akira/jobs/fair"
	"github.com/akira-bot/akira/jobs/flow"
	"github.com/akira-bot/akira/jobs/intake"
	"github.com/akira-bot/akira/jobs/metrics"
	"github.com/akira-bot/akira/jobs/notify"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner/agent"
	"github.com/akira-bot/akira/runner/agent/profiles"
	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/egress"
	"github.com/akira-bot/akira/runner/sandbox"
	"github.com/akira-bot/akira/runner/workspace"
)

func init() { subcommands = append(subcommands, newServeCmd) }

// serveEnv is the part of the environment that is not the GitHub App's (app.LoadConfigFromEnv reads that).
type serveEnv struct {
	RedisURL string
	// RedisPassword, when set, replaces the password of RedisURL: a deployment can keep the URL in
	// its configuration and the password in a secret.
	RedisPassword string
	// AdminAddr serves the REST API, the dashboard, /metrics and pprof (when on): an internal address, never
	// the webhook port, which faces the internet ("" when off).
	AdminAddr string
	// MetricsOpen serves /metrics on the admin address without a token (AKIRA_METRICS=open), for a
	// scraper that sends none; by default it wants a token that covers every repository.
	MetricsOpen bool
	// Pprof serves /debug/pprof on the admin address (AKIRA_PPROF=on), to a control token.
	Pprof bool
	// PublicURL is where people reach the admin address (through a VPN or an authenticating proxy):
	// check runs and summaries link the dashboard's task pages there.
	PublicURL string
	// LogRetention is how long attempt logs are kept.
	LogRetention time.Duration
	Concurrency  int
	WorkDir      string
	// CacheDir holds a mirror per repository that workspaces are made from ("" is no cache);
	// CacheMax caps its size.
	CacheDir        string
	CacheMax        int64
	ConfigFile      string
	ShutdownTimeout time.Duration
	LogLevel        slog.Level
	// Audit is the operator's audit sink (AKIRA_AUDIT_SINK and companions); its zero is none.
	Audit audit.Config
}

// redisWatchInterval is how often a server checks that Redis answers, to say when it is lost and back.
const redisWatchInterval = 2 * time.Second

// DefaultCacheMax caps the repository cache when AKIRA_CACHE_MAX is not set.
const DefaultCacheMax = 20 << 30

func loadServeEnv(getenv func(string) string) (serveEnv, error) {
	e := serveEnv{RedisURL: "redis://127.0.0.1:6379/0", Concurrency: 2, WorkDir: os.TempDir(), ShutdownTimeout: 5 * time.Minute}
	var errs []error
	if v := getenv("REDIS_URL"); v != "" {
		e.RedisURL = v
	}
	e.RedisPassword = getenv("REDIS_PASSWORD")
	if v := getenv("AKIRA_CONCURRENCY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("AKIRA_CONCURRENCY: %q is not a positive integer", v))
		}
		e.Concurrency = n
	}
	if v := getenv("AKIRA_WORKDIR"); v != "" {
		if st, err := os.Stat(v); err != nil || !st.IsDir() {
			errs = append(errs, fmt.Errorf("AKIRA_WORKDIR: %q is not a directory", v))
		}
		e.WorkDir = v
	}
	e.CacheDir, e.CacheMax = filepath.Join(e.WorkDir, "akira-cache"), DefaultCacheMax
	switch v := getenv("AKIRA_CACHE_DIR"); v {
	case "":
	case "off":
		e.CacheDir = ""
	default:
		e.CacheDir = v
	}
	if v := getenv("AKIRA_CACHE_MAX"); v != "" {
		n, err := config.ParseSize(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("AKIRA_CACHE_MAX: %w", err))
		}
		e.CacheMax = n
	}
	e.ConfigFile = getenv("AKIRA_CONFIG")
	if v := getenv("AKIRA_SHUTDOWN_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			errs = append(errs, fmt.Errorf("AKIRA_SHUTDOWN_TIMEOUT: %q is not a duration (e.g. 5m)", v))
		}
		e.ShutdownTimeout = d
	}
	e.AdminAddr = cmp.Or(getenv("AKIRA_ADMIN_ADDR"), "127.0.0.1:9090")
	if e.AdminAddr == "off" {
		e.AdminAddr = ""
	}
	switch v := getenv("AKIRA_METRICS"); v {
	case "", "token":
	case "open":
		e.MetricsOpen = true
	default:
		errs = append(errs, fmt.Errorf("AKIRA_METRICS: %q is not token (the default: a Bearer token is required) or open (no token, for a scraper)", v))
	}
	switch v := getenv("AKIRA_PPROF"); v {
	case "", "off":
	case "on":
		e.Pprof = true
	default:
		errs = append(errs, fmt.Errorf("AKIRA_PPROF: %q is not off (the default) or on (/debug/pprof for a control token)", v))
	}
	if v := getenv("AKIRA_PUBLIC_URL"); v != "" {
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("AKIRA_PUBLIC_URL: %q is not an http(s) URL", v))
		}
		e.PublicURL = strings.TrimRight(v, "/")
	}
	e.LogRetention = store.DefaultLogRetention
	if v := getenv("AKIRA_LOG_RETENTION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("AKIRA_LOG_RETENTION: %q is not a positive duration (e.g. 336h)", v))
		}
		e.LogRetention = d
	}
	if v := getenv("AKIRA_LOG_LEVEL"); v != "" {
		if err := e.LogLevel.UnmarshalText([]byte(v)); err != nil {
			errs = append(errs, fmt.Errorf("AKIRA_LOG_LEVEL: %q is not debug, info, warn or error", v))
		}
	}
	var err error
	if e.Audit, err = audit.LoadConfig(getenv); err != nil {
		errs = append(errs, err)
	}
	return e, errors.Join(errs...)
}

// redisClient opens REDIS_URL: redis://, rediss://, redis-socket:// or, for Sentinel,
// redis-sentinel://[:password@]host1:port1,host2:port2/db?master=name.
func redisClient(raw, password string) (redis.UniversalClient, error) {
	opt, err := asynq.ParseRedisURI(raw)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	if o, ok := opt.(asynq.RedisFailoverClientOpt); ok {
		// asynq reads a sentinel URL's password as the sentinels' only and drops its /db: the URL's
		// password is the master's too (as the README documents), and its database is the one asked for.
		if o.Password == "" {
			o.Password = o.SentinelPassword
		}
		if u, err := url.Parse(raw); err == nil {
			if db := strings.Trim(u.Path, "/"); db != "" {
				n, err := strconv.Atoi(db)
				if err != nil || n < 0 {
					return nil, fmt.Errorf("REDIS_URL: database %q is not a number", db)
				}
				o.DB = n
			}
		}
		opt = o
	}
	if password != "" {
		switch o := opt.(type) {
		case asynq.RedisClientOpt:
			o.Password = password
			opt = o
		case asynq.RedisFailoverClientOpt:
			o.Password = password
			opt = o
		case asynq.RedisClusterClientOpt:
			o.Password = password
			opt = o
		}
	}
	rdb, ok := opt.MakeRedisClient().(redis.UniversalClient)
	if !ok {
		return nil, errors.New("REDIS_URL: the URL does not make a Redis client")
	}
	return rdb, nil
}

func newServeCmd() *cobra.Command {
	var (
		webOnly, workerOnly bool
		envFile             string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the GitHub App: the webhook server and the workers",
		Long: `Serve runs the GitHub App. By default one process runs the webhook server (POST /webhook) and the
workers that run the jobs; --web-only and --worker-only split them, so that workers can scale out
on other machines against the same Redis. Every process also serves /healthz and /readyz, and on
the admin address (AKIRA_ADMIN_ADDR) the REST API, the dashboard, /metrics (with a token) and, with
AKIRA_PPROF=on, pprof (with a control token).

Environment:
  GITHUB_APP_ID, GITHUB_PRIVATE_KEY_PATH or GITHUB_PRIVATE_KEY, GITHUB_WEBHOOK_SECRET,
  GITHUB_API_URL (default https://api.github.com/), AKIRA_ADDR (default :8080), AKIRA_BOT_LOGIN,
  REDIS_URL (default redis://127.0.0.1:6379/0; redis-sentinel://host:port,host:port/0?master=NAME),
  REDIS_PASSWORD (replaces the URL's password),
  AKIRA_CONCURRENCY (runs in parallel per worker, default 2), AKIRA_WORKDIR (workspaces, default the
  system temp dir), AKIRA_CACHE_DIR (a mirror per repository, default $AKIRA_WORKDIR/akira-cache; off
  to clone every time), AKIRA_CACHE_MAX (its size cap, default 20GiB), AKIRA_CONFIG (the operator's YAML file: agent profiles), AKIRA_SHUTDOWN_TIMEOUT
  (how long running jobs get to reach a safe point on SIGTERM, default 5m), AKIRA_LOG_LEVEL,
  AKIRA_ADMIN_ADDR (the API under /api/v1, the dashboard under /ui, /metrics and /debug/pprof; default
  127.0.0.1:9090, off to disable; never expose it like the webhook), AKIRA_METRICS (token, the default:
  /metrics wants a token that covers every repository; open: none, for a scraper), AKIRA_PPROF (off,
  the default; on: /debug/pprof for a control token), AKIRA_PUBLIC_URL (where people
  reach the admin address; check runs then link to the dashboard), AKIRA_LOG_RETENTION (how long
  attempt logs are kept, default 336h), AKIRA_AUDIT_SINK (file:/path, JSON lines, or an http(s) URL
  that receives each audit event signed with AKIRA_AUDIT_SECRET; none by default), AKIRA_AUDIT_FILE_MAX
  (a file sink's size before it rotates, default 100MiB), AKIRA_AUDIT_FILE_KEEP (rotated files kept,
  default 10).`,
		Args: cobra.NoArgs,
		// Running jobs get AKIRA_SHUTDOWN_TIMEOUT to reach a safe point; a second signal ends it at once.
		Annotations: map[string]string{stopAnnotation: stopsItself},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if webOnly && workerOnly {
				return withExit(2, errors.New("--web-only and --worker-only exclude each other"))
			}
			getenv := os.Getenv
			if envFile != "" {
				vals, err := readEnvFile(envFile)
				if err != nil {
					return withExit(2, err)
				}
				getenv = func(k string) string {
					if v, ok := os.LookupEnv(k); ok {
						return v
					}
					return vals[k]
				}
			}
			return serve(cmd.Context(), serveRoles{web: !workerOnly, worker: !webOnly, envFile: envFile}, getenv)
		},
	}
	cmd.Flags().StringVar(&envFile, "env-file", "", "read settings from this KEY=VALUE file (akira setup writes one); the environment wins")
	cmd.Flags().BoolVar(&webOnly, "web-only", false, "run only the webhook server (no workers)")
	cmd.Flags().BoolVar(&workerOnly, "worker-only", false, "run only workers (the HTTP port serves health and metrics)")
	return cmd
}

// serveRoles are what a serve process does, and the --env-file its settings (model keys among them)
// come from.
type serveRoles struct {
	web, worker bool
	envFile     string
}

func serve(ctx context.Context, roles serveRoles, getenv func(string) string) error {
	appCfg, appErr := app.LoadConfigFromEnv(getenv)
	env, envErr := loadServeEnv(getenv)
	op, opErr := config.LoadOperator(env.ConfigFile)
	if opErr != nil {
		opErr = fmt.Errorf("AKIRA_CONFIG: %w", opErr)
	}
	if err := errors.Join(appErr, envErr, opErr); err != nil {
		return withExit(2, fmt.Errorf("configuration:\n%w", err))
	}
	logHandler := slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: env.LogLevel})
	log := slog.New(logHandler)
	slog.SetDefault(log)
	// Every listener is bound before anything starts: a taken port ends serve here, with exit 2 and
	// the variable to change, not after workers, a scheduler and an "akira serving" line.
	webLn, err := net.Listen("tcp", appCfg.Addr)
	if err != nil {
		return withExit(2, fmt.Errorf("AKIRA_ADDR: %w: stop the program that holds %s or set AKIRA_ADDR", err, appCfg.Addr))
	}
	defer webLn.Close()
	var adminLn net.Listener
	if env.AdminAddr != "" {
		if adminLn, err = net.Listen("tcp", env.AdminAddr); err != nil {
			return withExit(2, fmt.Errorf("AKIRA_ADMIN_ADDR: %w: stop the program that holds %s, set AKIRA_ADMIN_ADDR, or off to disable it", err, env.AdminAddr))
		}
		defer adminLn.Close()
	}
	var box sandbox.Config
	if roles.worker {
		var (
			warning string
			err     error
		)
		box, warning, err = resolveSandbox(op, sandboxChoice{explicitNone: true, available: func() error { return sandbox.Available("") }})
		if err == nil {
			err = checkOutOfSandbox("GITHUB_PRIVATE_KEY_PATH", getenv("GITHUB_PRIVATE_KEY_PATH"), box, env.WorkDir)
		}
		if err == nil {
			err = checkOutOfSandbox("--env-file", roles.envFile, box, env.WorkDir)
		}
		if err == nil {
			// A profile whose program is missing would fail every task that uses it; say so now.
			if missing := op.MissingPrograms(nil); len(missing) > 0 {
				err = errors.New("AKIRA_CONFIG: " + strings.Join(missing, "\nAKIRA_CONFIG: "))
			}
		}
		var keyWarnings, unpriced []string
		if err == nil {
			box.Withhold = profiles.ModelKeys(op, getenv, nil)
			keyWarnings, err = serveKeyCheck(op, box.Withhold, getenv)
		}
		if err == nil {
			// A profile whose tokens have no price is recorded at $0: a cost budget could not bind it.
			unpriced, err = serveModelCheck(op)
		}
		if err != nil {
			return withExit(2, fmt.Errorf("configuration:\n%w", err))
		}
		if warning != "" {
			log.Warn(warning)
		}
		for _, w := range keyWarnings {
			log.Warn(w)
		}
		for _, w := range unpriced {
			log.Warn("serve: " + w)
		}
		// One egress proxy per worker process: each attempt opens a session of its own on it.
		box.Egress = egress.New(egress.Config{Logger: log})
		for _, w := range serveNetworkWarnings(op, box) {
			log.Warn(w)
		}
		log.Info("sandbox", "mode", box.Mode, "verify_network", box.VerifyNetwork, "disk_limit", sandbox.Bytes(box.Disk),
			"egress_allow", strings.Join(box.Allow.Entries(), ","))
	}
	// Read before forgetSecrets empties the environment of them.
	masker := store.NewMasker(knownSecrets(op, getenv)...)
	if err := forgetSecrets(); err != nil {
		log.Warn("serve: could not close /proc to processes of the same user", "err", err)
	}

	rdb, err := redisConnect(ctx, env.RedisURL, env.RedisPassword)
	if err != nil {
		return err
	}
	defer rdb.Close()
	// From here on, a Redis lost is said once, and once more when it is back, however many parts poll it.
	watch := newRedisWatch(rdb, redisAddr(env.RedisURL), log)
	log = slog.New(watch.Handler(logHandler))
	slog.SetDefault(log)
	go watch.Run(ctx, redisWatchInterval)
	// The fair gate: caps and turns of installations for run jobs, paused by GitHub's rate limits.
	fg := fair.New(rdb, "", op.Fair, env.Concurrency)
	onRateLimit := func(id int64, wait time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := fg.Pause(ctx, id, time.Now().Add(wait)); err != nil {
			log.Warn("serve: pause a rate-limited installation", "installation", id, "err", err)
		}
	}
	ghApp, err := gh.NewApp(gh.AppConfig{AppID: appCfg.AppID, PrivateKeyPEM: appCfg.PrivateKeyPEM, BaseURL: appCfg.APIURL, Logger: log,
		OnRateLimit: onRateLimit})
	if err != nil {
		return withExit(2, err)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	inspector := asynq.NewInspectorFromRedisClient(rdb)
	metrics, err := metrics.NewMetrics(reg, inspector, queue.Queue)
	if err != nil {
		return err
	}
	if box.Egress != nil {
		reg.MustRegister(egressCollector{box.Egress})
	}
	asynqClient := asynq.NewClientFromRedisClient(rdb)
	defer asynqClient.Close()
	st := store.NewStore(rdb, "")
	// Every process with a sink runs a relay: whichever holds the lease delivers, so the sink is fed
	// while any process lives, web-only deployments included (API and dashboard actions are audited
	// there), and in the stream's order.
	if env.Audit.Enabled() {
		sink, err := audit.New(env.Audit)
		if err != nil {
			return withExit(2, fmt.Errorf("configuration:\n%w", err))
		}
		if c, ok := sink.(interface{ Close() error }); ok {
			defer c.Close()
		}
		relay := &audit.Relay{Stream: st.AuditTrail, Locker: store.NewLocker(rdb, ""), Sink: sink, Logger: log}
		if err := relay.Register(reg); err != nil {
			return err
		}
		relayCtx, stopRelay := context.WithCancel(context.WithoutCancel(ctx))
		relayDone := make(chan struct{})
		go func() { defer close(relayDone); relay.Run(relayCtx) }()
		defer func() { stopRelay(); <-relayDone }()
	}
	enq := queue.NewEnqueuer(asynqClient, queue.TaskOptions{}).WithFair(fg)

	ready := []app.ReadinessCheck{{Name: "redis", Check: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }}}
	health, err := app.NewHealth(ready, 0, log)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	var webhookHandler http.Handler
	if roles.web {
		botLogin := appCfg.BotLogin
		if botLogin == "" {
			lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			botLogin, err = ghApp.BotLogin(lctx)
			cancel()
			if err != nil {
				return fmt.Errorf("serve: ask GitHub for the app's bot login (or set AKIRA_BOT_LOGIN): %w", err)
			}
		}
		webhooks := prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "akira_webhooks_total", Help: "Webhook deliveries, by event and result.",
		}, []string{"event", "result"})
		// How long GitHub waits for the answer, as far as this process sees it: from the request's
		// headers read to the answer written. Exponential from 100 µs: an enqueue on a near Redis is
		// a fraction of a millisecond, GitHub gives up after 10 s.
		acks := prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "akira_webhook_ack_seconds", Help: "Time from a webhook delivery's headers read to its answer written, by event and result.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 13),
		}, []string{"event", "result"})
		reg.MustRegister(webhooks, acks)
		srvCfg := appCfg.Server()
		srvCfg.BotLogin = botLogin
		webhookHandler, err = app.NewServer(srvCfg, app.Deps{
			Enqueuer:  enq,
			Readiness: ready,
			Logger:    log,
			Observe: func(event, result string, took time.Duration) {
				webhooks.WithLabelValues(event, result).Inc()
				acks.WithLabelValues(event, result).Observe(took.Seconds())
			},
		})
		if err != nil {
			return err
		}
	} else {
		// A worker-only process answers health probes the same way, without a webhook route.
		webhookHandler = health.Handler()
	}
	mux.Handle("/", webhookHandler)

	var worker *asynq.Server
	var sched *asynq.Scheduler
	var schedStarted, workersStopped bool
	reapCtx, stopReaper := context.WithCancel(context.WithoutCancel(ctx))
	// reaperDone is waited for only once the reaper runs: a worker that fails to start (a cache
	// directory it cannot make, a bad judge) returns before it, and must not wait forever.
	reaperDone := make(chan struct{})
	reaperStarted := false
	defer func() {
		stopReaper()
		if reaperStarted {
			<-reaperDone
		}
	}()
	if roles.worker {
		var cache *workspace.Cache
		if env.CacheDir != "" {
			if cache, err = workspace.NewCache(env.CacheDir, env.CacheMax); err != nil {
				return withExit(2, fmt.Errorf("AKIRA_CACHE_DIR: %w", err))
			}
			cache.Logger = log
			// One checked-out tree kept per run slot: the next run of the same repository changes
			// what changed upstream instead of writing the whole tree again (a large repository's
			// cold workspace is mostly that). Removed when the process stops.
			cache.KeepWorkTrees = env.Concurrency
			defer cache.DropWorkTrees()
		}
		judge, err := profiles.NewJudge(op.JudgeProfile(), profiles.Options{Getenv: getenv, Logger: log})
		if err != nil {
			return withExit(2, fmt.Errorf("AKIRA_CONFIG: %w", err))
		}
		semantic, err := profiles.NewSemantic(op.Memory, profiles.Options{Getenv: getenv, Logger: log})
		if err != nil {
			return withExit(2, fmt.Errorf("AKIRA_CONFIG: %w", err))
		}
		sinks, err := notify.Sinks(op.Notify, os.Getenv)
		if err != nil {
			return withExit(2, fmt.Errorf("AKIRA_CONFIG: %w", err))
		}
		deps := flow.Deps{
			Store: st, Locker: store.NewLocker(rdb, ""), Enqueuer: enq,
			GitHub:   ghApp.Installations(),
			Operator: op, Sandbox: box, NewAgent: agentFactory(env.WorkDir, getenv, log), WorkDir: env.WorkDir, Cache: cache,
			DepCaches: depCachesBeside(env.CacheDir),
			Semantic:  semantic, Sinks: sinks, Metrics: metrics, Logger: log, Deliveries: ghApp,
			Masker: masker, LogRetention: env.LogRetention, PublicURL: env.PublicURL, Repositories: ghApp,
			Fair: fg,
		}
		if judge != nil {
			deps.Judge = judge // a nil *llm.Judge must not become a non-nil interface
		}
		h, err := jobs.NewHandler(deps)
		if err != nil {
			return err
		}
		worker = jobs.NewWorker(rdb, jobs.WorkerConfig{Concurrency: env.Concurrency, ShutdownTimeout: env.ShutdownTimeout, Logger: log})
		if err := worker.Start(jobs.NewServeMux(h)); err != nil {
			return fmt.Errorf("serve: start workers: %w", err)
		}
		// A start error from here on stops the workers it started, rather than leaving asynq's
		// goroutines to the process's exit.
		defer func() {
			if !workersStopped {
				stopReaper()
				if schedStarted {
					sched.Shutdown()
				}
				worker.Shutdown()
			}
		}()
		log.Info("workers started", "concurrency", env.Concurrency, "workdir", env.WorkDir, "agents", strings.Join(op.AgentNames(), ","))
		// Runs whose worker died are continued within a lock TTL and a sweep, not at asynq's lease
		// recovery a minute or more later (see jobs/run_reaper.go).
		reaperStarted = true
		go func() { defer close(reaperDone); h.RunReaper(reapCtx, 0) }()
		// This process's workers count in the total the fair gate's caps are shares of.
		go fg.Heartbeat(reapCtx)
		// Every worker's scheduler queues the sweep; the task is unique per interval, so one runs.
		sched = asynq.NewSchedulerFromRedisClient(rdb, &asynq.SchedulerOpts{Logger: sharedClientLogger{jobs.AsynqLogger(log)}, LogLevel: asynq.WarnLevel})
		if _, err := sched.Register(fmt.Sprintf("@every %s", queue.SweepInterval), queue.NewSweepTask("")); err != nil {
			return fmt.Errorf("serve: schedule the redelivery sweep: %w", err)
		}
		if err := sched.Start(); err != nil {
			return fmt.Errorf("serve: start the scheduler: %w", err)
		}
		schedStarted = true
	}

	if env.AdminAddr != "" {
		if env.MetricsOpen {
			log.Warn("serve: /metrics answers without a token (AKIRA_METRICS=open): keep the admin address where only the scraper reaches it")
		}
		adminHandler, err := admin.NewServer(admin.Deps{
			Store: st, Queue: inspector, Fair: fg, Metrics: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), Logger: log,
			MetricsOpen: env.MetricsOpen, Pprof: env.Pprof,
			Controller:    &intake.Controller{Store: st, Enqueuer: enq, Logger: log},
			SecureCookies: strings.HasPrefix(env.PublicURL, "https://"),
		})
		if err != nil {
			return err
		}
		go func() {
			if err := app.Serve(ctx, adminLn, adminHandler, 5*time.Second); err != nil {
				log.Warn("admin server stopped", "err", err)
			}
		}()
	}
	// The addresses bound, not the ones asked for: with port 0 (tests, several processes on one host)
	// this line is how a caller learns where Akira answers.
	adminAddr := "off"
	if adminLn != nil {
		adminAddr = adminLn.Addr().String()
	}
	log.Info("akira serving", "addr", webLn.Addr().String(), "admin_addr", adminAddr, "web", roles.web, "worker", roles.worker, "version", version)
	err = app.Serve(ctx, webLn, mux, 30*time.Second)
	if worker != nil {
		// Stop taking jobs; running ones get AKIRA_SHUTDOWN_TIMEOUT to reach a safe point, after which
		// their context ends and asynq puts them back: a retried run resumes from its last checkpoint.
		log.Info("stopping workers", "grace", env.ShutdownTimeout)
		stopReaper()
		sched.Shutdown()
		worker.Shutdown()
		workersStopped = true
	}
	if err != nil && ctx.Err() == nil {
		return err
	}
	log.Info("akira stopped")
	return nil
}

// agentFactory builds the agents of the operator's profiles for the workers, the same way akira run
// does; getenv holds their keys (the environment, then --env-file).
func agentFactory(workDir string, getenv func(string) string, log *slog.Logger) flow.AgentFactory {
	return func(name string, p config.AgentProfile) (agent.Agent, error) {
		return profiles.New(name, p, profiles.Options{TempDir: workDir, Getenv: getenv, Logger: log})
	}
}

// serveKeyCheck checks at start what becomes of the model keys (keys) the operator's profiles and
// env name: an exec profile that would be given one it cannot hold is an error; keys held back
// from every command are warnings.
func serveKeyCheck(op config.Operator, keys sandbox.Withheld, getenv func(string) string) ([]string, error) {
	var warnings []string
	var errs []error
	for _, name := range op.AgentNames() {
		withheld, err := profiles.AgentKeys(name, op.Agents[name], nil, op, keys, getenv)
		if err != nil {
			errs = append(errs, fmt.Errorf("AKIRA_CONFIG: %w", err))
			continue
		}
		if len(withheld) > 0 {
			warnings = append(warnings, fmt.Sprintf("agent %s: env: %s: model keys, held back from the agent, setup, verification and services",
				name, strings.Join(withheld, ", ")))
		}
	}
	return append(warnings, verifyKeyWarnings(op.Env, keys)...), errors.Join(errs...)
}

// knownSecrets are the values Akira holds that must never appear in a kept log: the App's own, the
// model keys (config.Operator.ModelKeyVars: the providers' variables and those the operator's file
// names), and the notification sinks' URLs, tokens and secrets.
func knownSecrets(op config.Operator, getenv func(string) string) []string {
	names := append(append([]string{}, secretVars...), op.ModelKeyVars()...)
	for _, s := range op.Notify.Sinks {
		names = append(names, s.URLEnv, s.TokenEnv, s.SecretEnv)
	}
	var out []string
	for _, n := range names {
		if v := getenv(n); n != "" && v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// sharedClientLogger drops the one error asynq's scheduler logs at every shutdown when it was built
// on a shared Redis client: it closes the client it was given, which asynq itself refuses ("redis
// connection is shared"), and says so at error level. The client is serve's, closed by serve.
type sharedClientLogger struct{ asynq.Logger }

const sharedCloseError = "Failed to close redis client connection: redis connection is shared"

func (l sharedClientLogger) Error(args ...any) {
	if msg := fmt.Sprint(args...); strings.HasPrefix(msg, sharedCloseError) {
		return
	}
	l.Logger.Error(args...)
}
