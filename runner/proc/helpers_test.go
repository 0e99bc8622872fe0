package proc

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
)

func fmtSscan(s string, v *int) (int, error) { return fmt.Sscan(s, v) }

func filepathJoin(root string, pid int, name string) string {
	return filepath.Join(root, strconv.Itoa(pid), name)
}

// zombie reports whether a /proc/<pid>/stat line says the process has exited but is not reaped.
func zombie(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}
