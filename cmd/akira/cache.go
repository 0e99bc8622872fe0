package main

import (
	"os"
	"path/filepath"

	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/env"
	"github.com/akira-bot/akira/runner/workspace"
)

// localCache is the repository cache of `akira run` and `akira status`: AKIRA_CACHE_DIR, else
// akira/mirrors in the user's cache directory; AKIRA_CACHE_DIR=off turns it off. It only serves
// network remotes (a local repository is cloned with hard links already). A cache that cannot be
// made is no reason to stop: the clone then goes to the remote as before.
func localCache() *workspace.Cache {
	dir := os.Getenv("AKIRA_CACHE_DIR")
	switch dir {
	case "off":
		return nil
	case "":
		base, err := os.UserCacheDir()
		if err != nil {
			return nil
		}
		dir = filepath.Join(base, "akira", "mirrors")
	}
	max := int64(DefaultCacheMax)
	if v := os.Getenv("AKIRA_CACHE_MAX"); v != "" {
		if n, err := config.ParseSize(v); err == nil {
			max = n
		}
	}
	c, err := workspace.NewCache(dir, max)
	if err != nil {
		return nil
	}
	return c
}

// depCachesBeside are the dependency caches next to a repository cache directory (its name with
// "-deps"): nil when the repository cache is off. AKIRA_DEPS_CACHE_MAX caps each repository's.
func depCachesBeside(mirrors string) *env.Caches {
	if mirrors == "" {
		return nil
	}
	c := &env.Caches{Root: filepath.Clean(mirrors) + "-deps"}
	if v := os.Getenv("AKIRA_DEPS_CACHE_MAX"); v != "" {
		if n, err := config.ParseSize(v); err == nil {
			c.Max = n
		}
	}
	return c
}

// localDepCaches are the dependency caches of `akira run`: AKIRA_DEPS_CACHE_DIR, else akira/deps in
// the user's cache directory; AKIRA_DEPS_CACHE_DIR=off turns them off.
func localDepCaches() *env.Caches {
	dir := os.Getenv("AKIRA_DEPS_CACHE_DIR")
	switch dir {
	case "off":
		return nil
	case "":
		base, err := os.UserCacheDir()
		if err != nil {
			return nil
		}
		dir = filepath.Join(base, "akira", "deps")
	}
	c := depCachesBeside(dir)
	c.Root = dir
	return c
}
