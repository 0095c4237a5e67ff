// Command hypershift runs hosted Kubernetes control planes.
package main

import (
	"os"

	"hypershift.dev/internal/cli"
	"hypershift.dev/internal/components/embedded"
)

func main() {
	os.Exit(cli.Execute(embedded.Run))
}
