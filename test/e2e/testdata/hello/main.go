// Command hello is the workload of the real-node tests, built into an image
// by the tests themselves (no registry, nothing downloaded). One static
// program plays every part a test needs:
//
//	hello                             say hello, answer HTTP on :8080
//	hello serve [-listen ADDR]        the same on ADDR
//	hello webhook -listen ADDR -cert FILE -key FILE
//	                                  a validating admission webhook over TLS (POST /validate)
//	hello get [-n N] URL              GET URL N times, each on a new connection
//	hello api [-server URL] [-sa DIR] PATH
//	                                  GET PATH of the API server with the pod's service-account token and CA
//	hello resolve NAME                print NAME's addresses, sorted, one a line
//	hello verify-token -audience A FILE
//	                                  verify the token in FILE as an in-cluster relying party (go-oidc)
//	hello write FILE TEXT             write TEXT to FILE
//	hello cat FILE                    print FILE
//	hello ARGS...                     print ARGS (for `kubectl exec`)
package main

import (
	"fmt"
	"os"
	"strings"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "hello:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return serve(nil)
	}
	switch args[0] {
	case "serve":
		return serve(args[1:])
	case "webhook":
		return webhook(args[1:])
	case "get":
		return get(args[1:])
	case "api":
		return api(args[1:])
	case "resolve":
		return resolve(args[1:])
	case "verify-token":
		return verifyToken(args[1:])
	case "write":
		if len(args) != 3 {
			return fmt.Errorf("usage: hello write FILE TEXT")
		}
		return os.WriteFile(args[1], []byte(args[2]), 0o600)
	case "cat":
		if len(args) != 2 {
			return fmt.Errorf("usage: hello cat FILE")
		}
		data, err := os.ReadFile(args[1])
		if err == nil {
			fmt.Print(string(data))
		}
		return err
	}
	fmt.Println(strings.Join(args, " "))
	return nil
}
