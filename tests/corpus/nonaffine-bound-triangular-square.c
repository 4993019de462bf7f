// expect: 5:25 non-affine
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < i * i; j++)
      B[0] = A[0];
}
