// expect: - N=
// options: --size N=100000,M=100000
void f(int N, int M, float A[N * M][N * M]) {
  A[0][0] = 1.0f;
}
