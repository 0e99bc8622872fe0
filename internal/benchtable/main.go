// Command benchtable is `make bench`: it runs Akira's benchmarks, each of which measures a figure
// and its floor in the same run, and prints one table of the figures, their floors and the ratios,
// with the machine's core count. BENCH_QUICK=1 runs the same harness on small inputs in about a
// minute, to keep it working in CI (the numbers of a quick run mean little).
//
// Each benchmark reports its figures as log lines "akira-bench: <key> <value>"; a step that fails
// (a test failure, a missing figure) fails the command.
package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// step is one `go test` invocation.
type step struct {
	what, pkg, run, bench, benchtime string
	// full is false for a step that only a full run takes (too slow for the quick one).
	quickToo bool
}

var figureRE = regexp.MustCompile(`akira-bench: (\S+) (-?[0-9.]+(?:e[-+]?[0-9]+)?)`)

func main() {
	quick := os.Getenv("BENCH_QUICK") != ""
	overheadTasks := "100x"
	ackRounds := "10x"
	modelCalls := "200x"
	if quick {
		overheadTasks, ackRounds, modelCalls = "20x", "1x", "20x"
	}
	steps := []step{
		{"engine overhead per task", "./runner/", "^$", "^BenchmarkTaskOverhead$", overheadTasks, true},
		// Five runs of 1,000 tasks (BENCH_GROWTH_RUNS=N for fewer): the longest step.
		{"per-task overhead as tasks accumulate", "./runner/", "^$", "^BenchmarkTaskGrowth$", "1x", true},
		// 300 events a size, the sizes taking turns (jobs/store's benchEvents).
		{"the run record's cost per event as tasks accumulate", "./jobs/store/", "^$", "^BenchmarkStoreUpdate$", "900x", true},
		{"parallel tasks", "./runner/", "^$", "^BenchmarkParallel$", "1x", true},
		{"akira plan on 1,000 to 100,000 tasks", "./runner/roadmap/", "^$", "^BenchmarkPlan$", "1x", true},
		{"webhook acknowledgement", "./e2e/", "^$", "^BenchmarkWebhookAck$", ackRounds, true},
		{"a burst of deliveries", "./e2e/", "^$", "^BenchmarkWebhookBurst$", "1x", true},
		{"workspaces", "./runner/workspace/", "^$", "^BenchmarkWorkspace$", "1x", true},
		// The repository of 100,000 files is generated once and kept in the user's cache directory.
		{"a repository of 100,000 files", "./runner/", "^$", "^BenchmarkWide$", "1x", true},
		{"workers on more than one machine", "./cmd/akira/", "^$", "^BenchmarkScaleOut$", "1x", true},
		{"worker memory over a long run", "./cmd/akira/", "^$", "^BenchmarkWorkerRSS$", "1x", true},
		{"recovery after SIGKILL", "./e2e/", "^TestWorkerKilledMidRun$", "", "", false},
		{"idle RSS", "./cmd/akira/", "^TestIdleRSS$", "", "", true},
		{"GitHub calls per task", "./e2e/", "^TestGitHubCallsPerTask$", "", "", true},
		{"GitHub calls per signed checkpoint", "./e2e/", "^TestSignedCallsPerTask$", "", "", true},
		{"egress proxy per model call", "./runner/egress/", "^$", "^BenchmarkProxyOverhead$", modelCalls, true},
		// Minutes, most of them Go compiling its standard library in the sandbox.
		{"setup with a cold and a warm dependency cache", "./cmd/akira/", "^TestEnvExamples$", "", "", false},
		{"fair shares across installations", "./e2e/", "^TestFairShareAcrossInstallations$", "", "", true},
	}
	start := time.Now()
	figures := map[string]float64{}
	for _, s := range steps {
		if quick && !s.quickToo {
			continue
		}
		fmt.Fprintf(os.Stderr, "bench: %s (%s)...\n", s.what, s.pkg)
		args := []string{"test", "-count=1", "-v", "-timeout=15m", "-run", s.run}
		if s.bench != "" {
			args = append(args, "-bench", s.bench, "-benchtime", s.benchtime)
		}
		args = append(args, s.pkg)
		var out bytes.Buffer
		cmd := exec.CommandContext(context.Background(), "go", args...)
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			os.Stderr.Write(out.Bytes())
			fmt.Fprintf(os.Stderr, "bench: %s failed: %v\n", s.what, err)
			os.Exit(1)
		}
		// A benchmark that skips (a tool missing on this machine) gives no figures: say why now, so
		// that the table's "missing" at the end is not the first word of it.
		lines := strings.Split(out.String(), "\n")
		for i, line := range lines {
			if strings.Contains(line, "--- SKIP:") && i > 0 {
				fmt.Fprintf(os.Stderr, "bench: %s skipped: %s\n", strings.TrimSpace(strings.TrimPrefix(line, "--- SKIP:")), strings.TrimSpace(lines[i-1]))
			}
		}
		for _, m := range figureRE.FindAllStringSubmatch(out.String(), -1) {
			v, err := strconv.ParseFloat(m[2], 64)
			if err == nil {
				figures[m[1]] = v
			}
		}
	}
	if err := printTable(os.Stdout, figures, quick, time.Since(start)); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// row is one line of the table: the figure, its floor and the goal on the ratio (or on the value
// when there is no floor).
type row struct {
	figure, value, floor, ratio, goal, verdict string
}

func printTable(w io.Writer, f map[string]float64, quick bool, took time.Duration) error {
	var missing []string
	get := func(key string) float64 {
		v, ok := f[key]
		if !ok {
			missing = append(missing, key)
		}
		return v
	}
	verdict := func(ok bool) string {
		if ok {
			return "✓"
		}
		return "✗"
	}
	ratioRow := func(figure, unit string, value, floor float64, floorName string, goal float64) row {
		r := value / floor
		g, v := "—", ""
		if goal > 0 {
			g, v = fmt.Sprintf("≤ %.3g×", goal), verdict(r <= goal)
		}
		return row{figure, fmt.Sprintf("%.2f %s", value, unit), fmt.Sprintf("%.2f %s (%s)", floor, unit, floorName), fmt.Sprintf("%.2f×", r), g, v}
	}
	var rows []row
	rows = append(rows, ratioRow("engine overhead per task (no-op agent, `true` verify)", "ms",
		get("task.overhead.ms"), get("task.floor.ms"), "git add + commit + push", 1.3))
	// The ack as the server holds it (what akira_webhook_ack_seconds records), then the round trip
	// as the sender sees it, next to the same enqueue behind a bare net/http handler: what is the HTTP
	// hop's (client and server on the same cores) and what is Akira's own.
	kb := get("ack.payload.bytes") / 1000
	rows = append(rows, ratioRow(fmt.Sprintf("webhook ack p50, held by the server (headers read → 202 written), 200 concurrent %.0f kB deliveries", kb), "ms",
		get("ack.held_p50.ms"), get("ack.floor_p50.ms"), "bare asynq enqueue, interleaved request by request", 1.5))
	rows = append(rows, ratioRow(fmt.Sprintf("webhook ack p99, held by the server (headers read → 202 written), 200 concurrent %.0f kB deliveries", kb), "ms",
		get("ack.held_p99.ms"), get("ack.floor_p99.ms"), "bare asynq enqueue, interleaved request by request", 1.5))
	rows = append(rows, ratioRow("webhook round trip p50 as the sender sees it (its HTTP client on the same cores)", "ms",
		get("ack.p50.ms"), get("ack.floor_p50.ms"), "bare asynq enqueue", 0))
	rows = append(rows, ratioRow("webhook round trip p99 as the sender sees it (its HTTP client on the same cores)", "ms",
		get("ack.p99.ms"), get("ack.floor_p99.ms"), "bare asynq enqueue", 0))
	rows = append(rows, ratioRow("webhook round trip p50 vs a bare HTTP handler that enqueues", "ms",
		get("ack.p50.ms"), get("ack.http_p50.ms"), "net/http + enqueue", 0))
	rows = append(rows, ratioRow("webhook round trip p99 vs a bare HTTP handler that enqueues", "ms",
		get("ack.p99.ms"), get("ack.http_p99.ms"), "net/http + enqueue", 0))
	burstN, burstS := get("burst.deliveries"), get("burst.seconds")
	lost, doubled := get("burst.lost"), get("burst.doubled")
	rows = append(rows, row{fmt.Sprintf("a burst of %.0f deliveries in %.0f s (every tenth redelivered): deliveries lost, doubled", burstN, burstS),
		fmt.Sprintf("%.0f lost, %.0f doubled", lost, doubled), "—", "—", "0, 0", verdict(lost == 0 && doubled == 0)})
	rows = append(rows, ratioRow(fmt.Sprintf("webhook hold p50 during the burst of %.0f deliveries", burstN), "ms",
		get("burst.held_p50.ms"), get("burst.floor_p50.ms"), "bare asynq enqueue by the same sender", 0))
	rows = append(rows, ratioRow(fmt.Sprintf("webhook hold p99 during the burst of %.0f deliveries", burstN), "ms",
		get("burst.held_p99.ms"), get("burst.floor_p99.ms"), "bare asynq enqueue by the same sender", 1.5))
	mib := f["workspace.objects.mib"]
	rows = append(rows, ratioRow(fmt.Sprintf("cold workspace, %.0f MiB repository over smart HTTP", mib), "s",
		get("workspace.cold.seconds"), get("workspace.clone.seconds"), "git clone", 0))
	rows = append(rows, ratioRow("warm workspace (mirror present, 3 new commits upstream)", "s",
		get("workspace.warm.seconds"), get("workspace.cold.seconds"), "cold workspace", 0.1))
	wideFiles, wideMiB := get("wide.files"), get("wide.tree.mib")
	rows = append(rows, ratioRow(fmt.Sprintf("cold workspace, repository of %.0f files (%.0f MiB of tree) over smart HTTP", wideFiles, wideMiB), "s",
		get("wide.cold.seconds"), get("wide.clone.seconds"), "git clone", 1.2))
	rows = append(rows, ratioRow(fmt.Sprintf("warm workspace, %.0f files (mirror and a kept work tree present, 3 new commits upstream)", wideFiles), "s",
		get("wide.warm.seconds"), get("wide.cold.seconds"), "cold workspace", 0.05))
	rows = append(rows, ratioRow(fmt.Sprintf("engine CPU per task on %.0f files (no-op agent, `true` verify; engine + its git, push included; median, in step)", wideFiles), "ms",
		get("wide.task_cpu.ms"), get("wide.floor_cpu.ms"), "git add -A && git commit", 1.3))
	one, two := get("scaleout.one.seconds"), get("scaleout.two.seconds")
	rows = append(rows, row{fmt.Sprintf("throughput of 2 `akira serve --worker-only` processes vs 1 (one `--web-only`, one Redis; %.0f runs of %.0f tasks, agent %.1f s per task)",
		get("scaleout.runs"), get("scaleout.tasks"), get("scaleout.agent.seconds")),
		fmt.Sprintf("%.1f s", two), fmt.Sprintf("%.1f s (one worker process)", one), fmt.Sprintf("%.2f× throughput", one/two), "≥ 1.8×", verdict(one/two >= 1.8)})
	rec2 := get("scaleout.recovery.seconds")
	rows = append(rows, row{"SIGKILL of one of 2 worker processes mid-run → its task started again in the other (no task committed or started twice: checked)",
		fmt.Sprintf("%.1f s", rec2), "—", "—", "≤ 5 s", verdict(rec2 <= 5)})
	rssStart, rssMiddle, rssEnd, rssMax := get("worker_rss.start.mib"), get("worker_rss.middle.mib"), get("worker_rss.end.mib"), get("worker_rss.max.mib")
	rows = append(rows, row{fmt.Sprintf("RSS of `akira serve --worker-only` over a run of %.0f tasks: after the first task / the middle / the end (most seen %.1f MiB; idle before %.1f MiB)",
		get("worker_rss.tasks"), rssMax, get("worker_rss.idle.mib")),
		fmt.Sprintf("%.1f / %.1f / %.1f MiB", rssStart, rssMiddle, rssEnd), "—", fmt.Sprintf("end %.2f× middle", rssEnd/rssMiddle),
		"≤ 100 MiB, flat (end ≤ 1.1× middle)", verdict(rssMax <= 100 && rssEnd <= 1.1*rssMiddle)})
	if quick {
		rows = append(rows, row{"recovery after SIGKILL of a worker (kill → next attempt running)", "not run (BENCH_QUICK)", "—", "—", "≤ 5 s", ""})
	} else {
		rec := get("recovery.seconds")
		rows = append(rows, row{"recovery after SIGKILL of a worker (kill → next attempt running)", fmt.Sprintf("%.1f s", rec), "—", "—", "≤ 5 s", verdict(rec <= 5)})
	}
	rss := get("serve.idle_rss.mib")
	rows = append(rows, row{"idle RSS of `akira serve` (web + workers)", fmt.Sprintf("%.1f MiB", rss), "—", "—", "≤ 40 MiB", verdict(rss <= 40)})
	restPerTask := get("github.rest_per_task")
	rows = append(rows, row{"GitHub REST calls per task (marginal, 1 vs 11 tasks through the fake GitHub; 304s not counted)",
		fmt.Sprintf("%.1f", restPerTask), "—", "—", "≤ 3", verdict(restPerTask <= 3)})
	rows = append(rows, row{"git requests per task (marginal, 1 vs 11 tasks; one push is 2)",
		fmt.Sprintf("%.1f", get("github.git_per_task")), "—", "—", "—", ""})
	rows = append(rows, ratioRow("GitHub REST calls per task, checkpoints signed through the API (a ruleset requires it; GraphQL counted)", "calls",
		get("github.signed.rest_per_task"), get("github.pushed.rest_per_task"), "pushed with git", 2))
	rows = append(rows, ratioRow("git requests per task, checkpoints signed through the API (GitHub's commit fetched back)", "requests",
		get("github.signed.git_per_task"), get("github.pushed.git_per_task"), "pushed with git", 0))
	growthSizes, growthRuns := []int{1000}, "the median of 5 runs"
	if quick {
		growthSizes, growthRuns = []int{40}, "one run"
	}
	if v := os.Getenv("BENCH_GROWTH_RUNS"); v != "" && !quick {
		growthRuns = "the median of " + v + " runs"
	}
	for _, n := range growthSizes {
		k := fmt.Sprintf("growth.%d.", n)
		stepped := get(k + "stepped")
		rows = append(rows, row{fmt.Sprintf("per-task CPU growth over plain git's, measured in step (each task's CPU over git's for the same change right after it; last 20 of %d tasks vs first 20, medians; %s)", n, growthRuns),
			fmt.Sprintf("%.3f×", stepped), "—", "—", "≤ 1.05×", verdict(stepped <= 1.05)})
		rows = append(rows, ratioRow(fmt.Sprintf("per-task CPU (engine + git), last 20 of %d tasks vs first 20 (medians; moves with the machine, and with git's own growth below)", n), "ms",
			get(k+"last_cpu.ms"), get(k+"first_cpu.ms"), "first 20 tasks", 0))
		rows = append(rows, ratioRow(fmt.Sprintf("the engine's own CPU per task (without git), last 20 of %d tasks vs first 20", n), "ms",
			get(k+"last_self_cpu.ms"), get(k+"first_self_cpu.ms"), "first 20 tasks", 0))
		rows = append(rows, ratioRow(fmt.Sprintf("per-task wall time, last 20 of %d tasks vs first 20 (medians)", n), "ms",
			get(k+"last.ms"), get(k+"first.ms"), "first 20 tasks", 0))
		rows = append(rows, ratioRow(fmt.Sprintf("plain git's CPU per task, last 20 of %d vs first 20 (the repository's own growth)", n), "ms",
			get(k+"floor_last_cpu.ms"), get(k+"floor_first_cpu.ms"), "first 20 tasks", 0))
	}
	for _, n := range []int{200, 1000} {
		// Issue 48: an event costs the run's record the same whatever the run's length (within noise).
		goal := 0.0
		if n == 1000 {
			goal = 1.5
		}
		rows = append(rows, ratioRow(fmt.Sprintf("the run record's change per event (Redis, one task changed), run of %d tasks vs 20", n), "µs",
			get(fmt.Sprintf("store.update.%d.us", n)), get("store.update.20.us"), "run of 20 tasks", goal))
	}
	// The plans of each convention (checklist, GSD, spec-kit with and without its order section,
	// Kiro, OpenSpec): the slowest one of each size, next to what a linear growth from its own
	// 1,000-task plan would give.
	for _, size := range []struct {
		n    int
		goal float64
	}{{10_000, 1}, {100_000, 10}} {
		slowest, conv := 0.0, ""
		for _, c := range []string{"checklist", "gsd", "spec-kit", "spec-kit-order", "kiro", "openspec"} {
			if v := get(fmt.Sprintf("plan.%s.%d.seconds", c, size.n)); v >= slowest {
				slowest, conv = v, c
			}
		}
		linear := get(fmt.Sprintf("plan.%s.1000.seconds", conv)) * float64(size.n) / 1000
		rows = append(rows, row{fmt.Sprintf("`akira plan --parallel 8` without printing (parse, check, order, waves), %d tasks: the slowest of 6 conventions (%s)", size.n, conv),
			fmt.Sprintf("%.2f s", slowest), fmt.Sprintf("%.2f s (its 1,000-task plan × %d)", linear, size.n/1000), fmt.Sprintf("%.2f×", slowest/linear),
			fmt.Sprintf("≤ %.0f s", size.goal), verdict(slowest <= size.goal)})
	}
	rows = append(rows, ratioRow("three [P] tasks with a 3 s agent, 3 at once", "s",
		get("parallel.parallel.seconds"), get("parallel.sequential.seconds"), "one at a time", 0.5))
	rows = append(rows, ratioRow("proxy overhead per model call p50 (streamed, through the sandbox's forwarder, metered)", "ms",
		get("proxy.p50.ms"), get("proxy.floor_p50.ms"), "direct call", 1.1))
	rows = append(rows, ratioRow("proxy overhead per model call p99 (streamed, through the sandbox's forwarder, metered)", "ms",
		get("proxy.p99.ms"), get("proxy.floor_p99.ms"), "direct call", 1.1))
	// The examples' package servers run on this machine and answer at once: the cold figure is the
	// package manager's own work (resolving, fetching, unpacking, compiling), no network latency.
	for _, ex := range []struct{ key, what string }{
		{"go", "Go (`go mod download && go build ./...`, module proxy)"},
		{"node", "Node (`npm ci --prefer-offline`, npm registry)"},
		{"python", "Python (venv + pip from a wheelhouse, PEP 503 index)"},
	} {
		figure := "setup of examples/env-" + ex.key + ", second run (setup snapshot restored, warm dependency cache) vs first (cold cache: setup run, its snapshot saved): " + ex.what +
			" on this machine, no latency added"
		if quick {
			rows = append(rows, row{figure, "not run (BENCH_QUICK)", "—", "—", "≥ 5× faster", ""})
			continue
		}
		warm, cold, cached := get("env."+ex.key+".warm.seconds"), get("env."+ex.key+".cold.seconds"), get("env."+ex.key+".cache.seconds")
		// What the dependency cache alone gives, setup run again without the snapshot, stays in view.
		figure += fmt.Sprintf("; setup run again on the warm dependency cache alone: %.2f s (%.1f×)", cached, cold/cached)
		speedup := cold / warm
		value := fmt.Sprintf("%.2f s", warm)
		if warm < 0.1 {
			// A restore takes milliseconds: seconds with two decimals would read 0.00.
			value = fmt.Sprintf("%.0f ms", warm*1000)
		}
		rows = append(rows, row{figure, value, fmt.Sprintf("%.2f s (first run, cold cache)", cold),
			fmt.Sprintf("%.0f× faster", speedup), "≥ 5× faster", verdict(speedup >= 5)})
	}
	rows = append(rows, ratioRow("time to first agent call, 1-task run of installation B behind 100 queued tasks of A (2 workers, agent 1 s per task)", "s",
		get("fair.first_call.seconds"), get("fair.task.seconds"), "one task of A's run", 2))
	if len(missing) > 0 {
		return fmt.Errorf("figures missing from the benchmarks' output: %s", strings.Join(missing, ", "))
	}
	mode := "full"
	if quick {
		mode = "quick (BENCH_QUICK=1: small inputs, the harness only)"
	}
	fmt.Fprintf(w, "Akira benchmarks — %s, %d cores, %s %s/%s, %s run in %s\n\n", time.Now().UTC().Format(time.DateOnly),
		runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH, mode, took.Round(time.Second))
	fmt.Fprintln(w, "| figure | value | floor (same run) | ratio | goal | |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", r.figure, r.value, r.floor, r.ratio, r.goal, r.verdict)
	}
	return nil
}
