__global__ void add(float *x) {}
int main() { return 0; }
