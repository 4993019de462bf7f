// expect: 6:19 local array
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  double tmp[8];
  for (int i = 0; i < N; i++)
    B[i] = A[i] + tmp[i];
}
