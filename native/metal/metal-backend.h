// The Metal kernel set (backend.h table). Registered on macOS builds (BRAINSTEM_WITH_METAL);
// compiled everywhere, so the native tests run this very table over the shim device.
#pragma once
#include "common/backend.h"
#include "metal/metal-device.h"

namespace bs {

const Backend& metal_backend();

namespace metal {
// The device the table runs on: the system GPU unless a test installed another (nullptr restores).
void use_device(Device* d);
// One line for info()/doctor: the device, its working-set budget, or why it is unusable.
std::string describe();
// The whole-forward decoder for a session of m on the current device (metal-decoder.h); nullptr
// when there is no usable device or the model is not covered.
std::unique_ptr<DeviceDecoder> session_decoder(const Model& m, int64_t context_length);
}  // namespace metal

}  // namespace bs
