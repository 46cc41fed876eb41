package tensorbench

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"

	"github.com/glyd/glyd/internal/fp8"
	"github.com/glyd/glyd/safetensors"
)

// FP8Set names the synthetic fp8 set: the corpus has no fp8 checkpoint, so
// each bf16 file is cast to F8_E4M3 the way fp8 checkpoints are made
// (per-tensor scaling of the largest magnitude to 448, E4M3's largest
// finite value, then rounding to nearest even) and measured like the real
// files. Its tensors are coded whole (tensor.B8).
const FP8Set = "fp8-e4m3 (synthetic, from bf16)"

// castFP8 writes file's bf16 tensors as F8_E4M3 (other tensors as they
// are) to a new safetensors file in dir.
func castFP8(file []byte, dir, name string) (string, error) {
	st, err := safetensors.Parse(file)
	if err != nil {
		return "", err
	}
	type entry struct {
		Dtype       safetensors.Dtype `json:"dtype"`
		Shape       []int64           `json:"shape"`
		DataOffsets [2]int64          `json:"data_offsets"`
	}
	hdr := map[string]any{}
	if st.Metadata != nil {
		hdr[safetensors.MetadataKey] = st.Metadata
	}
	var data []byte
	for _, i := range st.DataOrder() {
		t := &st.Tensors[i]
		d := st.Data(file, t)
		begin := int64(len(data))
		dt := t.Dtype
		if dt == safetensors.BF16 {
			dt = safetensors.F8E4M3
			var amax float64
			for k := 0; k+1 < len(d); k += 2 {
				amax = max(amax, math.Abs(float64(bf16Float(binary.LittleEndian.Uint16(d[k:])))))
			}
			scale := 1.0
			if amax > 0 && !math.IsInf(amax, 0) && !math.IsNaN(amax) {
				scale = 448 / amax
			}
			for k := 0; k+1 < len(d); k += 2 {
				data = append(data, fp8.E4M3(float64(bf16Float(binary.LittleEndian.Uint16(d[k:])))*scale))
			}
		} else {
			data = append(data, d...)
		}
		hdr[t.Name] = entry{dt, t.Shape, [2]int64{begin, int64(len(data))}}
	}
	h, err := json.Marshal(hdr)
	if err != nil {
		return "", err
	}
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	out = append(append(out, h...), data...)
	path := filepath.Join(dir, name)
	return path, os.WriteFile(path, out, 0o644)
}

func bf16Float(w uint16) float32 { return math.Float32frombits(uint32(w) << 16) }
