// expect: 5:9 non-affine
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  for (int i = 0; i < N; i++)
    if (A[i] > 0.0)
      B[i] = A[i];
}
