//go:build unix

package webchat

import "os"

// diskFile writes data to a new file in dir that is removed from dir as
// soon as it is made, and returns it open: the bytes are on disk,
// reachable through the returned file alone, and the system frees them
// when it is closed or the process ends, by a crash too, so nothing is
// left behind. They cost the process no memory: the kernel's page cache
// holds what it can spare of them, and reads them back when evicted.
func diskFile(dir string, data []byte) (*os.File, error) {
	f, err := os.CreateTemp(dir, "herald-webchat-*")
	if err != nil {
		return nil, err
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
