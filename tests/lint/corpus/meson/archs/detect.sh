#!/bin/sh
A=1
echo "${GPU_ARCH:-80}" $A
