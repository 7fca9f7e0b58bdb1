// Command bot is Herald's runnable example bot.
//
// This first version only proves the module builds and runs; the browser
// chat and the plugins arrive with the engine and webchat packages.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stdout, "herald: the example bot is not wired to an adapter yet; see README.md")
}
