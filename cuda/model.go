package cuda

import (
	"bytes"
	"fmt"
	"time"

	"github.com/glyd/glyd/safetensors"
)

// Tensor is a tensor in device memory.
type Tensor struct {
	Name  string
	Dtype safetensors.Dtype
	Shape []int64
	Ptr   DevPtr // device address of its first byte
	Size  int64  // bytes
	File  string // the file it came from
}

// Stats describe a load.
type Stats struct {
	Files       int
	Packed      int   // of them packed
	FileBytes   int64 // bytes read from the files
	DeviceBytes int64 // bytes copied to the device (packed payloads, tables, CPU-decoded bytes)
	TensorBytes int64 // bytes of the tensors as loaded
	Spans       int   // spans decoded on the GPU
	Groups      int   // groups decoded on the GPU (one thread each)
	Launches    int   // kernel launches (blocks start as their bytes arrive)
	CPUDecoded  int   // packed files decoded on the CPU (Loader.CPUBelow)
	// Total is the wall time from opening the first file to the last
	// tensor being on the device, checked. Read is the part spent reading
	// files and copying them to the device (overlapped, and the kernels
	// run beside it), Decode the wait for the kernels after the last copy,
	// CPU the CPU's part of packed files (metadata, tensors of the meta
	// section).
	Total, Read, Decode, CPU time.Duration
	// Alloc is the part spent allocating device memory, HostCopy copying
	// the CPU's tensors (both within Read); Layout the headers and plans
	// of every file, read before the first byte is uploaded.
	Alloc, HostCopy, Layout time.Duration
}

// GBps is the tensor bytes made ready per second of Total, in 10^9 bytes.
func (s *Stats) GBps() float64 {
	if s.Total <= 0 {
		return 0
	}
	return float64(s.TensorBytes) / s.Total.Seconds() / 1e9
}

// ReadGBps is the file bytes read per second of Total, in 10^9 bytes.
func (s *Stats) ReadGBps() float64 {
	if s.Total <= 0 {
		return 0
	}
	return float64(s.FileBytes) / s.Total.Seconds() / 1e9
}

func (s *Stats) String() string {
	kind := "plain safetensors"
	if s.Packed == s.Files {
		kind = "packed"
	} else if s.Packed > 0 {
		kind = fmt.Sprintf("%d packed, %d plain", s.Packed, s.Files-s.Packed)
	}
	if s.CPUDecoded > 0 {
		kind += fmt.Sprintf(", %d decoded on the CPU", s.CPUDecoded)
	}
	return fmt.Sprintf("%d file(s) (%s): read %d bytes, %d tensor bytes on the device in %v (%.2f GB/s of tensors, %.2f GB/s read); "+
		"read+copy %v, GPU decode %v after it (%d spans, %d groups, %d launches), CPU %v",
		s.Files, kind, s.FileBytes, s.TensorBytes, s.Total.Round(time.Microsecond), s.GBps(), s.ReadGBps(),
		s.Read.Round(time.Microsecond), s.Decode.Round(time.Microsecond), s.Spans, s.Groups, s.Launches, s.CPU.Round(time.Microsecond))
}

// Mismatch is the first difference Verify found in one file.
type Mismatch struct {
	File   string
	Tensor string // "" outside every tensor
	Offset int64  // byte offset in the data section
}

// compareData compares a file's data section as loaded (got) with the CPU's
// (want) and names the first differing tensor.
func compareData(l *Layout, got, want []byte) *Mismatch {
	if bytes.Equal(got, want) {
		return nil
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	m := &Mismatch{File: l.Path, Offset: int64(i)}
	for _, t := range l.Tensors {
		if int64(i) >= t.Off && int64(i) < t.Off+t.Size {
			m.Tensor = t.Name
		}
	}
	return m
}

func (m *Mismatch) Error() string {
	if m.Tensor != "" {
		return fmt.Sprintf("%s: tensor %s differs from the CPU decode at data byte %d", m.File, m.Tensor, m.Offset)
	}
	return fmt.Sprintf("%s: data section differs from the CPU decode at byte %d", m.File, m.Offset)
}
