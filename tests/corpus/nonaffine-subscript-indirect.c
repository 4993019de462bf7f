// expect: 5:7 non-affine
// options: --size N=8
void f(int N, int P[N], double A[N], double B[N]) {
  for (int i = 0; i < N; i++)
    B[P[i]] = A[i];
}
