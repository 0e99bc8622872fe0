package main

import "testing"

func TestGreeting(t *testing.T) {
	if got := greeting([]string{"Ada"}); got != "Hello, Ada!" {
		t.Errorf("greeting(Ada) = %q", got)
	}
	if got := greeting(nil); got != "Hello, world!" {
		t.Errorf("greeting() = %q", got)
	}
}
