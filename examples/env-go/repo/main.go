// Command hello greets whoever is named on its command line.
package main

import (
	"fmt"
	"os"
	"strings"

	"example.com/greetings"
)

func main() {
	fmt.Println(greeting(os.Args[1:]))
}

func greeting(args []string) string {
	return greetings.Hello(strings.Join(args, " "))
}
