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
}  // namespace metal

}  // namespace bs
