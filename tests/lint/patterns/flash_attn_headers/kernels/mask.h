#pragma once
#include "flash.h"
