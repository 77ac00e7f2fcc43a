// Prints what Go's time.ParseDuration makes of each form karpdoctor's Go-duration reader
// (src/disruption/godur.rs) is tested with: the nanoseconds, or "error". Karpenter 1.12+ reads
// a pod's karpenter.sh/do-not-disrupt value with it. Run: go run scripts/go/duration_forms.go
package main

import (
	"fmt"
	"time"
)

func main() {
	forms := []string{"30m", "1h30m", "1.5h", ".5s", "300ms", "2µs", "2us", "0", "-1m", "+5s", "1h0m0s",
		"", "true", "30", "1d", "1.h.", ".s", "1hh", "1H", " 1m", "-", "9999999999h", "1.h", "00"}
	for _, f := range forms {
		d, err := time.ParseDuration(f)
		if err != nil {
			fmt.Printf("%q error\n", f)
			continue
		}
		fmt.Printf("%q %d\n", f, int64(d))
	}
}
