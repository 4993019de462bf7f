// expect: 5:9 data-dependent condition
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  for (int i = 0; i < N; i++)
    if (A[i] > 0.0) {
      A[i] = 0.0;
      B[i] = A[i];
    }
}
