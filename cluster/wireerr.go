package cluster

import (
	"slices"

	"github.com/heraldbot/herald/internal/errwire"
)

// wireError is an error as one member tells another (see package
// errwire), so that errors.Is and platform.IsPermanent say on the member
// that made a call what they said on the gateway that answered it. Its
// fields are those of outcome's first version (error, permanent) and two
// more, which older members ignore.
type wireError = errwire.Error

// sentinels are the errors a wireError carries by name: errwire's and the
// cluster's own.
var sentinels = append(slices.Clip(errwire.Sentinels),
	errwire.Sentinel{Name: "lease_lost", Err: ErrLeaseLost},
	errwire.Sentinel{Name: "gateway_busy", Err: errGatewayBusy})

// encodeError returns err as a wireError; a nil err gives the zero value.
func encodeError(err error) wireError { return errwire.Encode(err, sentinels) }

// decodeError returns the error w stands for, nil for the zero value (see
// errwire.Error.Decode).
func decodeError(w wireError) error { return w.Decode(sentinels) }
