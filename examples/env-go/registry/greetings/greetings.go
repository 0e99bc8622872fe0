// Package greetings is the dependency of the env-go example. It is not published anywhere: the
// example's test serves it from a local Go module proxy, as a company's private proxy would.
package greetings

import "fmt"

// Hello greets name.
func Hello(name string) string {
	if name == "" {
		name = "world"
	}
	return fmt.Sprintf("Hello, %s!", name)
}
