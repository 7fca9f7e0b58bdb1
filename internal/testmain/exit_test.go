package testmain_test

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/heraldbot/herald/internal/testmain"
)

// exitWith, when set, makes the test binary end at once with its value
// through Exit: the binary is its own child in TestExitKeepsTheCode.
const exitWith = "HERALD_TESTMAIN_EXIT"

func TestMain(m *testing.M) {
	if v := os.Getenv(exitWith); v != "" {
		code, _ := strconv.Atoi(v)
		os.Stdout.WriteString("before exit\n")
		testmain.Exit(code)
	}
	queue.SetUp(1)
	testmain.Exit(m.Run())
}

// Exit ends with the code it is given, 0 included (under the race
// detector, at once), and what was written before it is there.
func TestExitKeepsTheCode(t *testing.T) {
	for _, code := range []int{0, 1, 3} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), exitWith+"="+strconv.Itoa(code))
		out, err := cmd.Output()
		got := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			got = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if got != code || string(out) != "before exit\n" {
			t.Errorf("Exit(%d): the child ended with %d, wrote %q", code, got, out)
		}
	}
}
