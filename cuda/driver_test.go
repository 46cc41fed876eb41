package cuda

import (
	"errors"
	"testing"
)

// Without a driver, Open and Doctor fail with ErrNoDriver and a message
// that says so, never a panic; with one, Doctor names the device.
func TestDoctor(t *testing.T) {
	msg, err := Doctor()
	if err != nil {
		if !errors.Is(err, ErrNoDriver) {
			t.Logf("driver present but unusable: %v", err)
		}
		if err.Error() == "" {
			t.Fatal("empty error")
		}
		return
	}
	t.Log(msg)
}
