// Command calc is the demo project of Akira: a tiny calculator that the roadmap grows task by task.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: calc <expression>")
		os.Exit(2)
	}
	fmt.Println("calc: nothing implemented yet")
}
