// Package fileio holds the file handling the glyd command needs and the
// codec does not: output files that appear under their final name only when
// complete, removal of unfinished output on a signal, and terminal checks.
package fileio

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// ErrExists is returned (wrapped) when an output file exists and overwriting
// was not allowed.
var ErrExists = errors.New("already exists")

// ExistsError says which file is in the way.
type ExistsError struct{ Path string }

func (e *ExistsError) Error() string {
	return e.Path + ": already exists (use -f to overwrite)"
}

func (e *ExistsError) Unwrap() error { return ErrExists }

// Output is a file being written under a temporary name in the directory of
// its final name. Commit syncs it and moves it into place; Abort removes it.
// Until Commit returns, nothing exists under the final name that was not
// there before.
type Output struct {
	*os.File
	final string
	tmp   string
	force bool

	mode    fs.FileMode // applied at Commit when modeSet
	modeSet bool
	mtime   time.Time
	atime   time.Time
	done    bool
}

// Create starts an output file that will be named final once committed. It
// fails with an *ExistsError when final exists and force is false (Commit
// checks again, so a file that appears meanwhile is not replaced either).
// The temporary file is registered for removal by RemoveTemps.
func Create(final string, force bool) (*Output, error) {
	if fi, err := os.Lstat(final); err == nil {
		if !force {
			return nil, &ExistsError{final}
		}
		if fi.IsDir() {
			return nil, fmt.Errorf("%s: is a directory", final)
		}
	}
	dir, base := filepath.Split(final)
	for range 100 {
		var rnd [6]byte
		_, _ = rand.Read(rnd[:])
		tmp := filepath.Join(dir, "."+base+".tmp-"+hex.EncodeToString(rnd[:]))
		// Mode 0666 lets the umask decide, as for any new file; Commit
		// applies the input's mode when the caller asks for it.
		f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				// Name the file the user asked for, not the temporary one.
				return nil, &fs.PathError{Op: "create", Path: final, Err: pe.Err}
			}
			return nil, err
		}
		o := &Output{File: f, final: final, tmp: tmp, force: force}
		register(tmp)
		return o, nil
	}
	return nil, fmt.Errorf("%s: cannot find a free temporary name", final)
}

// Name is the final name.
func (o *Output) Name() string { return o.final }

// TempName is the name the data is written under until Commit.
func (o *Output) TempName() string { return o.tmp }

// CopyMetadata makes Commit give the output the permission bits and
// modification time of fi, as compressors conventionally do.
func (o *Output) CopyMetadata(fi fs.FileInfo) {
	o.mode, o.modeSet = fi.Mode().Perm(), true
	o.mtime = fi.ModTime()
	o.atime = atime(fi)
}

// Commit flushes the data to stable storage, applies metadata, and renames
// the file to its final name (replacing an existing file only when force
// was given), then syncs the directory. On error the temporary file is
// removed and nothing appears under the final name.
func (o *Output) Commit() (err error) {
	if o.done {
		return errors.New(o.final + ": output already finished")
	}
	defer func() {
		if err != nil {
			o.Abort()
		}
	}()
	if err := o.File.Sync(); err != nil {
		return o.pathErr("sync", err)
	}
	if o.modeSet {
		if err := o.File.Chmod(o.mode); err != nil {
			return o.pathErr("chmod", err)
		}
	}
	if err := o.File.Close(); err != nil {
		return o.pathErr("close", err)
	}
	if !o.mtime.IsZero() {
		if err := os.Chtimes(o.tmp, o.atime, o.mtime); err != nil {
			return o.pathErr("chtimes", err)
		}
	}
	// Rename under the registry lock: a signal arriving now either finds
	// the temporary file still registered (and removes it) or the rename
	// complete.
	mu.Lock()
	if o.force {
		err = os.Rename(o.tmp, o.final)
	} else {
		err = renameNoReplace(o.tmp, o.final)
	}
	if err == nil {
		delete(temps, o.tmp)
		o.done = true
	}
	mu.Unlock()
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return &ExistsError{o.final}
		}
		return o.pathErr("rename", err)
	}
	return syncDir(filepath.Dir(o.final))
}

// Abort closes and removes the temporary file. It is safe to call after
// Commit (it then does nothing) and more than once.
func (o *Output) Abort() {
	if o.done {
		return
	}
	o.done = true
	_ = o.File.Close()
	mu.Lock()
	_ = os.Remove(o.tmp)
	delete(temps, o.tmp)
	mu.Unlock()
}

func (o *Output) pathErr(op string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &fs.PathError{Op: op, Path: o.final, Err: err}
}

// renameNoReplace renames without replacing an existing file. It uses an
// atomic primitive where the system has one and falls back to a check.
func renameNoReplace(from, to string) error {
	if ok, err := renameNoReplaceAtomic(from, to); ok {
		return err
	}
	// A hard link fails if the target exists, atomically; not every file
	// system has hard links.
	if err := os.Link(from, to); err == nil {
		return os.Remove(from)
	} else if errors.Is(err, fs.ErrExist) {
		return err
	}
	if _, err := os.Lstat(to); err == nil {
		return &fs.PathError{Op: "rename", Path: to, Err: fs.ErrExist}
	}
	return os.Rename(from, to)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return nil // not fatal: the data itself is synced
	}
	defer d.Close()
	_ = d.Sync() // some file systems do not sync directories
	return nil
}

// The registry of temporary files a signal must not leave behind.
var (
	mu    sync.Mutex
	temps = map[string]struct{}{}
)

func register(tmp string) {
	mu.Lock()
	temps[tmp] = struct{}{}
	mu.Unlock()
}

// RemoveTemps removes every temporary output file not yet committed or
// aborted. It keeps the registry locked afterwards, so no Commit can rename
// a file into place once it has run: call it only on the way to exit.
func RemoveTemps() {
	mu.Lock()
	for t := range temps {
		_ = os.Remove(t)
		delete(temps, t)
	}
}
