// expect: 5:14 non-affine
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  for (int i = 0; i < N; i++)
    B[i] = A[i * i];
}
