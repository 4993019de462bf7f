// expect: ok
// options: --size N=24
void free(int N, double A[N], double B[N]) {
  for (int i = 0; i < N; i++)
    B[i] = 2.0 * A[i] + 1.0;
}
