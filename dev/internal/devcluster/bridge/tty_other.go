//go:build !linux

package bridge

import (
	"errors"
	"os"
)

const noCTTY = 0

// makeRaw is only implemented on Linux, where guests run.
func makeRaw(*os.File) error {
	return errors.New("serial line raw mode is only implemented on Linux")
}
